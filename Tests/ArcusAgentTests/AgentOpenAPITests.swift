import ArcusCRDT
import Foundation
import Testing

@testable import ArcusAgent

/// The OpenAPI description of the HTTP API (`AgentOpenAPI`, served at `GET /v1/openapi.json`)
/// against the routes the agent really has (`AgentHTTPAPI.routes`).
@Suite("AgentOpenAPI")
struct AgentOpenAPITests {
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    static func document() throws -> [String: Value] {
        guard case .object(let object) = try Value(json: AgentOpenAPI.json) else {
            Issue.record("the OpenAPI document is not a JSON object")
            return [:]
        }
        return object
    }

    /// `METHOD path` for each operation of the document, with OpenAPI's `{name}` parameters.
    static func documentedOperations(_ document: [String: Value]) -> Set<String> {
        guard case .object(let paths)? = document["paths"] else { return [] }
        var operations: Set<String> = []
        for (path, item) in paths {
            guard case .object(let fields) = item else { continue }
            for method in fields.keys where methods.contains(method) { operations.insert("\(method.uppercased()) \(path)") }
        }
        return operations
    }

    /// `/v1/subscriptions/:id` as OpenAPI writes it, `/v1/subscriptions/{id}`.
    static func openAPIPath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { part in
            part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
        }.joined(separator: "/")
    }

    @Test("the document is JSON, OpenAPI 3.1.0, with a bearer scheme applied to every route but the page")
    func parses() throws {
        let document = try Self.document()
        #expect(document["openapi"] == .string("3.1.0"))
        guard case .object(let info)? = document["info"] else { Issue.record("no info"); return }
        #expect(info["title"] == .string("Arcus agent API"))
        #expect(info["version"] == .string("1"))
        #expect(document["security"] == .array([.object(["bearerAuth": .array([])])]))
        guard case .object(let paths)? = document["paths"] else { Issue.record("no paths"); return }
        for route in AgentHTTPAPI.routes {
            guard case .object(let item)? = paths[Self.openAPIPath(route.path)],
                  case .object(let operation)? = item[route.method.lowercased()] else { continue }
            #expect(operation["security"] == (route.access == .page ? .array([]) : nil), "\(route): its security")
            #expect(operation["operationId"] != nil && operation["summary"] != nil, "\(route): an operationId and a summary")
            guard case .object(let responses)? = operation["responses"] else { Issue.record("\(route) has no responses"); continue }
            if route.access == .data { #expect(responses["401"] != nil, "\(route) answers 401 without the token") }
        }
    }

    @Test("every route the agent serves is in the document, and every operation of the document is a route")
    func pathsAreTheRoutes() throws {
        let documented = Self.documentedOperations(try Self.document())
        let served = Set(AgentHTTPAPI.routes.map { "\($0.method) \(Self.openAPIPath($0.path))" })
        let undocumented = served.subtracting(documented).sorted()
        let unserved = documented.subtracting(served).sorted()
        #expect(undocumented.isEmpty, "served by the agent (AgentHTTPAPI.routes) but missing from AgentOpenAPI.json: \(undocumented)")
        #expect(unserved.isEmpty, "in AgentOpenAPI.json but not served by the agent (AgentHTTPAPI.routes): \(unserved)")
        #expect(served.contains("GET /v1/openapi.json"))
        #expect(served.contains("DELETE /v1/subscriptions/{id}"))
    }

    @Test("every $ref of the document points at something in it")
    func referencesResolve() throws {
        let document = Value.object(try Self.document())
        var references: [String] = []
        func walk(_ value: Value) {
            switch value {
            case .object(let object):
                if case .string(let reference)? = object["$ref"] { references.append(reference) }
                object.values.forEach(walk)
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(document)
        #expect(!references.isEmpty)
        for reference in Set(references) {
            #expect(reference.hasPrefix("#/"), "\(reference) is not local")
            var target: Value? = document
            for name in reference.dropFirst(2).split(separator: "/") {
                guard case .object(let object)? = target else { target = nil; break }
                target = object[String(name)]
            }
            #expect(target != nil, "\(reference) points at nothing")
        }
    }

    @Test("a running agent serves the document at GET /v1/openapi.json, as JSON, with the token only")
    func served() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-openapi-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        do {
            let host = ("Host", "127.0.0.1:\(agent.port)")
            let answer = try await RawHTTP.exchange(port: agent.port, "GET", "/v1/openapi.json",
                                                    headers: [host, ("Authorization", "Bearer " + agent.token)])
            #expect(answer.status == 200, "\(answer)")
            #expect(answer.header("Content-Type") == "application/json; charset=utf-8", "\(answer.head)")
            #expect(answer.body == AgentOpenAPI.json + "\n")
            let reply = try await agent.request(.GET, "/v1/openapi.json")
            let expected = try Value(json: AgentOpenAPI.json)
            #expect(reply.status == 200 && reply.json == expected, "\(reply.status) \(reply.body.prefix(200))")
            let anonymous = try await RawHTTP.exchange(port: agent.port, "GET", "/v1/openapi.json", headers: [host])
            #expect(anonymous.status == 401, "\(anonymous)")
        } catch {
            await agent.halt()
            throw error
        }
        await agent.halt()
    }
}
