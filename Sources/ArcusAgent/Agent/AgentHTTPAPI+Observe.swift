import ArcusCRDT
import ArcusStore
import Hummingbird
import NIOCore

extension AgentHTTPAPI {
    /// `GET /v1/observe?q=<SELECT>[&args=<JSON object>]`: server-sent events, one `result` event
    /// with the current result at once, then one after every commit that changes it, each
    /// `{"items": […], "diff": {"insertions", "deletions", "updates", "moves"}}`. The observer is
    /// cancelled when the client goes away or the agent stops.
    static func observe(_ request: Request, agent: Agent) throws -> Response {
        let parameters = FormQuery(request.uri.query)
        guard let query = try parameters.get("q"), !query.isEmpty else {
            throw APIError(.badRequest, "give the SELECT to observe as ?q=…")
        }
        var arguments: [String: Value] = [:]
        if let text = try parameters.get("args") {
            guard case .object(let object)? = try? Value(json: text) else {
                throw APIError(.badRequest, "args must be a JSON object, such as {\"color\": \"blue\"}")
            }
            arguments = object
        }
        let events: AsyncStream<ObserverEvent>
        do {
            events = try agent.observe(query, arguments: arguments)
        } catch let error as DQLError {
            throw APIError(.badRequest, "error at \(error.description)")
        } catch let error as StoreError {
            throw APIError(.badRequest, "error: \(error.description)")
        } catch let error as AgentStopping {
            throw APIError(.serviceUnavailable, error.description)
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody(asyncSequence: events.map { ByteBuffer(string: "event: result\ndata: \(eventJSON($0))\n\n") })
        )
    }

    static func eventJSON(_ event: ObserverEvent) -> String {
        let diff = event.diff
        return Value.object([
            "items": .array(event.items),
            "diff": .object([
                "insertions": .array(diff.insertions.map { .int(Int64($0)) }),
                "deletions": .array(diff.deletions.map { .int(Int64($0)) }),
                "updates": .array(diff.updates.map { .int(Int64($0)) }),
                "moves": .array(diff.moves.map { .object(["from": .int(Int64($0.from)), "to": .int(Int64($0.to))]) }),
            ]),
        ]).jsonString
    }
}
