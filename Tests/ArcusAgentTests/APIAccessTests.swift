import ArcusAgent
import ArcusCRDT
import Foundation
import Logging
import Prometheus
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP API answers only its own clients (issue 17, finding 6): an `arcus agent` process,
/// sent requests byte for byte as a hostile client (a web page in a browser on the device,
/// another local user) sends them. Each refused request leaves the store as it was.
@Suite("HTTP API: Host, Origin, content type and token")
struct APIAccessTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-access-\(UUID().uuidString)").path

    static let write = #"{"statement": "INSERT INTO pwned DOCUMENTS ({'_id': 'x'})"}"#

    /// The `pwned` collection, which only a refused request could have written.
    static func pwned(_ agent: RunningAgent) async throws -> Value? {
        try await agent.execute("SELECT * FROM pwned").json
    }

    static let empty: Value = ["items": [], "mutatedDocumentIDs": []]

    @Test("a request whose Host is not a loopback name (a DNS-rebinding page's), or that has none or two, gets 421 before any route runs")
    func foreignHostRefused() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        let port = agent.port
        let bearer = ("Authorization", "Bearer " + agent.token)
        let json = ("Content-Type", "application/json")
        let foreign: [[(String, String)]] = [
            [("Host", "rebound.example:\(port)")], [("Host", "rebound.example")], [("Host", "127.0.0.1.rebound.example:\(port)")],
            [("Host", "localhost.rebound.example:\(port)")], [("Host", "10.0.0.7:\(port)")], [("Host", "0.0.0.0:\(port)")], [("Host", "")],
            [("Host", "localhost:\(port)@rebound.example")], [], [("Host", "127.0.0.1:\(port)"), ("Host", "rebound.example")],
        ]
        for hosts in foreign {
            for (method, path, body) in [("GET", "/v1/status", nil), ("POST", "/v1/execute", Self.write), ("GET", "/", nil)] as [(String, String, String?)] {
                let answer = try await RawHTTP.exchange(port: port, method, path, headers: hosts + [bearer, json], body: body)
                #expect(answer.status == 421, "\(hosts) \(method) \(path): \(answer)")
                #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true, "\(answer.head)")
                #expect(answer.error?.contains("Host") == true, "\(hosts): \(answer)")
                #expect(!answer.body.contains(agent.peer) && !answer.body.contains(agent.token), "\(answer)")
            }
        }
        let refusal = try await RawHTTP.exchange(port: port, "GET", "/v1/status", headers: [("Host", "rebound.example:\(port)"), bearer])
        #expect(refusal.error?.contains("DNS rebinding") == true, "\(refusal)")
        #expect(try await Self.pwned(agent) == Self.empty)

        // Loopback names, with or without a port, in any case, are this agent.
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "[::1]:\(port)", "127.8.9.10:\(port)", "127.0.0.1"] {
            let answer = try await RawHTTP.exchange(port: port, "GET", "/v1/status", headers: [("Host", host), bearer])
            #expect(answer.status == 200, "\(host): \(answer)")
        }
    }

    @Test("a request from a web page of another origin is refused with 403, GETs included; so is one the browser marks cross-site")
    func foreignOriginRefused() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        let port = agent.port
        let base: [(String, String)] = [("Host", "127.0.0.1:\(port)"), ("Authorization", "Bearer " + agent.token), ("Content-Type", "application/json")]
        let hostile: [[(String, String)]] = [
            [("Origin", "http://evil.example")], [("Origin", "http://127.0.0.1:\(port + 1)")], [("Origin", "http://localhost:\(port)")],
            [("Origin", "null")], [("Origin", "https://127.0.0.1:\(port)")], [("Origin", "http://127.0.0.1:\(port)"), ("Origin", "http://evil.example")],
            [("Sec-Fetch-Site", "cross-site")], [("Sec-Fetch-Site", "same-site")],
            // Only a top-level navigation may come from elsewhere, and only to the page.
            [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")],
        ]
        for headers in hostile {
            for (method, path, body) in [("GET", "/v1/status", nil), ("GET", "/v1/peers", nil), ("POST", "/v1/execute", Self.write),
                                         ("POST", "/v1/subscriptions", #"{"query": "SELECT * FROM pwned"}"#)] as [(String, String, String?)] {
                let answer = try await RawHTTP.exchange(port: port, method, path, headers: base + headers, body: body)
                #expect(answer.status == 403, "\(headers) \(method) \(path): \(answer)")
                #expect(answer.error?.contains("refused") == true, "\(answer)")
                #expect(!answer.body.contains(agent.peer), "\(answer)")
            }
        }
        // A CORS preflight gets no permission either.
        let preflight = try await RawHTTP.exchange(port: port, "OPTIONS", "/v1/execute", headers: [
            ("Host", "127.0.0.1:\(port)"), ("Origin", "http://evil.example"), ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type"),
        ])
        #expect(preflight.status == 403 && preflight.header("Access-Control-Allow-Origin") == nil, "\(preflight.head)")
        #expect(try await Self.pwned(agent) == Self.empty)
        let subscriptions = try await agent.request(.GET, "/v1/subscriptions")
        #expect(subscriptions.json == ["subscriptions": []], "\(subscriptions.body)")

        // The agent's own page, and the browser's own navigation, are served.
        for headers in [[("Origin", "http://127.0.0.1:\(port)")], [("Sec-Fetch-Site", "same-origin")], [("Sec-Fetch-Site", "none")]] {
            let answer = try await RawHTTP.exchange(port: port, "GET", "/v1/status", headers: base + headers)
            #expect(answer.status == 200, "\(headers): \(answer)")
        }
        let navigation = try await RawHTTP.exchange(port: port, "GET", "/", headers: [
            ("Host", "127.0.0.1:\(port)"), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document"),
        ])
        #expect(navigation.status == 200 && navigation.body.contains("<title>Arcus agent</title>"), "\(navigation)")
        #expect(navigation.header("X-Frame-Options") == "DENY", "\(navigation.head)")
        #expect(navigation.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true, "\(navigation.head)")
    }

    @Test("a body a web page can send unasked (text/plain, a form, none) is refused with 415 naming the header to send, and changes nothing")
    func nonJSONBodiesRefused() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        let port = agent.port
        let base: [(String, String)] = [("Host", "127.0.0.1:\(port)"), ("Authorization", "Bearer " + agent.token)]
        let form = "statement=" + "INSERT INTO pwned DOCUMENTS ({'_id': 'form'})".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let multipart = "--b\r\nContent-Disposition: form-data; name=\"statement\"\r\n\r\nINSERT INTO pwned DOCUMENTS ({'_id': 'm'})\r\n--b--\r\n"
        let bodies: [(type: String?, body: String)] = [
            ("text/plain", Self.write), ("text/plain;charset=UTF-8", Self.write), ("application/x-www-form-urlencoded", form),
            ("multipart/form-data; boundary=b", multipart), (nil, Self.write), ("application/json; charset=latin1", Self.write),
            ("application/jsonx", Self.write), ("", Self.write),
        ]
        for (type, body) in bodies {
            for path in ["/v1/execute", "/v1/subscriptions"] {
                let sent = path == "/v1/execute" ? body : body.replacingOccurrences(of: "statement", with: "query")
                let answer = try await RawHTTP.exchange(port: port, "POST", path, headers: base + (type.map { [("Content-Type", $0)] } ?? []), body: sent)
                #expect(answer.status == 415, "\(type ?? "no type") \(path): \(answer)")
                #expect(answer.error?.contains("Content-Type: application/json") == true, "\(answer)")
            }
            // An upload takes raw bytes, but not of a type a page can send unasked.
            if type.map({ !$0.hasPrefix("application/json") }) ?? true {
                let upload = try await RawHTTP.exchange(port: port, "POST", "/v1/attachments?collection=pwned&id=blob&field=f",
                                                        headers: base + (type.map { [("Content-Type", $0)] } ?? []), body: body)
                #expect(upload.status == 415, "\(type ?? "no type") upload: \(upload)")
                #expect(upload.error?.contains("Content-Type: application/octet-stream") == true, "\(upload)")
            }
        }
        #expect(try await Self.pwned(agent) == Self.empty)
        let subscriptions = try await agent.request(.GET, "/v1/subscriptions")
        #expect(subscriptions.json == ["subscriptions": []], "\(subscriptions.body)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.hasPrefix(".upload-") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // JSON, declared as such (a UTF-8 charset allowed), is run.
        let good = try await RawHTTP.exchange(port: port, "POST", "/v1/execute",
                                              headers: base + [("Content-Type", "Application/JSON; charset=utf-8")], body: #"{"statement": "SELECT * FROM pwned"}"#)
        #expect(good.status == 200, "\(good)")
    }

    /// Every route of the API, as a request: parameters filled in, a body where it takes one.
    static func sample(_ route: AgentHTTPRoute) -> (path: String, type: String?, body: String?) {
        let path = route.path.replacingOccurrences(of: ":id", with: "999").replacingOccurrences(of: ":hash", with: String(repeating: "0", count: 64))
        switch (route.method, route.path) {
        case ("POST", "/v1/execute"): return (path, "application/json", #"{"statement": "SELECT * FROM cars"}"#)
        case ("POST", "/v1/subscriptions"): return (path, "application/json", #"{"query": "SELECT * FROM cars"}"#)
        case ("POST", "/v1/attachments"): return (path + "?collection=photos&id=p&field=image", "application/octet-stream", "bytes")
        // Not a list (and this agent's mesh has no certificates): answered 400 or 409, never taken.
        case ("POST", "/v1/mesh/revocations"): return (path, "application/json", #"{"list": "AAAA"}"#)
        // Not a SELECT, so that it answers (400) rather than stream.
        case ("GET", "/v1/observe"): return (path + "?q=DELETE%20FROM%20cars", nil, nil)
        default: return (path, nil, nil)
        }
    }

    @Test("every route that reads or writes data answers 401 without the token or with a wrong one, and serves it with the right one; only the page needs none")
    func everyDataRouteWantsTheToken() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        let port = agent.port
        let host = ("Host", "127.0.0.1:\(port)")
        let wrong = String(repeating: "ab", count: 32)
        let tokenFile = (data as NSString).appendingPathComponent("api-token")
        #expect(AgentHTTPAPI.routes.filter { $0.access == .page }.map(\.description) == ["GET /"])
        #expect(AgentHTTPAPI.routes.count == Set(AgentHTTPAPI.routes).count)
        for route in AgentHTTPAPI.routes {
            let (path, type, body) = Self.sample(route)
            let content = type.map { [("Content-Type", $0)] } ?? []
            let authorizations: [[(String, String)]] = [
                [], [("Authorization", "Bearer " + wrong)], [("Authorization", "Bearer " + String(agent.token.dropLast()))],
                [("Authorization", "Basic " + agent.token)], [("Authorization", agent.token)], [("Authorization", "Bearer")],
                [("Authorization", "Bearer " + wrong), ("Authorization", "Bearer " + agent.token)],
            ]
            for authorization in authorizations {
                let answer = try await RawHTTP.exchange(port: port, route.method, path, headers: [host] + content + authorization, body: body)
                if route.access == .page {
                    #expect(answer.status == 200, "\(route) with \(authorization): \(answer)")
                    continue
                }
                #expect(answer.status == 401, "\(route) with \(authorization): \(answer)")
                #expect(answer.header("WWW-Authenticate") == #"Bearer realm="arcus""#, "\(route): \(answer.head)")
                #expect(answer.error?.contains(tokenFile) == true && answer.error?.contains("--token-file") == true, "\(route): \(answer)")
                #expect(!answer.body.contains(wrong) && !answer.body.contains(agent.token), "\(route) echoed a token: \(answer)")
            }
            let answer = try await RawHTTP.exchange(port: port, route.method, path,
                                                    headers: [host, ("Authorization", "bearer  " + agent.token.uppercased())] + content, body: body)
            #expect(![401, 403, 421, 415].contains(answer.status), "\(route) with the token: \(answer)")
        }
        // A route that does not exist says nothing to a stranger either.
        let unknown = try await RawHTTP.exchange(port: port, "GET", "/v1/secret", headers: [host])
        #expect(unknown.status == 401, "\(unknown)")
        #expect(try await Self.pwned(agent) == Self.empty)
    }

    @Test("a method a route's path does not take gets 405 with Allow naming those it does; a path no route has gets 404; neither changes the store")
    func methodNotAllowed() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        let headers = [("Host", "127.0.0.1:\(agent.port)"), ("Authorization", "Bearer " + agent.token), ("Content-Type", "application/json")]
        for (method, path, allowed) in [
            ("PUT", "/v1/execute", "POST"), ("GET", "/v1/execute", "POST"), ("DELETE", "/v1/status", "GET"),
            ("PATCH", "/v1/subscriptions", "GET, POST"), ("GET", "/v1/subscriptions/7", "DELETE"), ("PUT", "/v1/attachments/abc", "GET"),
        ] {
            let answer = try await RawHTTP.exchange(port: agent.port, method, path, headers: headers, body: Self.write)
            #expect(answer.status == 405, "\(method) \(path): \(answer)")
            #expect(answer.header("Allow") == allowed, "\(method) \(path): \(answer.head)")
            #expect(answer.error?.contains("not \(method)") == true, "\(answer)")
        }
        let unknown = try await RawHTTP.exchange(port: agent.port, "GET", "/v1/nothing", headers: headers)
        #expect(unknown.status == 404, "\(unknown)")
        #expect(unknown.error?.contains("no route GET /v1/nothing") == true, "\(unknown)")
        #expect(try await Self.pwned(agent) == Self.empty)
    }

    @Test("the token is made on the first start, 64 hex digits in DIR/api-token with mode 0600, and kept across restarts; a copy for the agent's user is 0600 in a 0700 directory and goes when the agent stops")
    func tokenFiles() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-state-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let first = try await RunningAgent.launch(data: data, environment: ["XDG_STATE_HOME": state])
        let tokenFile = (data as NSString).appendingPathComponent("api-token")
        #expect(try Self.mode(tokenFile) == 0o600)
        #expect(first.token.count == 64 && first.token.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        let copy = "\(state)/arcus/agents/localhost:\(first.port)"
        #expect(try Self.mode(copy) == 0o600)
        #expect(try Self.mode("\(state)/arcus/agents") == 0o700)
        #expect(try String(contentsOfFile: copy, encoding: .utf8) == first.token + "\n")
        #expect(!first.log.contains(first.token), "the log shows the token")
        #expect(await first.halt() == 0)
        #expect(!FileManager.default.fileExists(atPath: copy), "the copy outlived the agent")

        let second = try await RunningAgent.launch(data: data, environment: ["XDG_STATE_HOME": state])
        defer { second.dismiss() }
        #expect(second.token == first.token)

        // A token file others may read stops the next agent, saying what to do.
        await second.halt()
        chmod(tokenFile, 0o644)
        let refused = try await ArcusProcess.run(["agent", "--data", data, "--http", "127.0.0.1:0"])
        #expect(refused.status == 1 && refused.standardError.contains("chmod 600 \(tokenFile)"), "\(refused.standardError)")
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("--http beyond loopback is refused unless --http-expose; exposed, the ready line says to whom")
    func exposure() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        // Refused before anything binds or resolves. The process is given only documentation
        // addresses (RFC 5737, RFC 3849), which no interface here has: an agent that did not
        // refuse them (one built before this check) fails to bind them, sending nothing. The
        // wildcards and a name are checked where nothing can bind or resolve them.
        for address in ["192.0.2.10:4747", "[2001:db8::1]:4747"] {
            let outcome = try await ArcusProcess.run(["agent", "--data", data, "--http", address])
            #expect(outcome.status == 2, "\(address): \(outcome.standardError)")
            #expect(outcome.standardError.contains("--http-expose") && outcome.standardError.contains("plain HTTP"), "\(outcome.standardError)")
            #expect(outcome.standardOutput.isEmpty)
        }
        let configuration = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-expose-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: configuration) }
        try Data(#"{"http": "192.0.2.10:4747"}"#.utf8).write(to: configuration)
        let fromFile = try await ArcusProcess.run(["agent", "--data", data, "--config", configuration.path])
        #expect(fromFile.status == 2 && fromFile.standardError.contains("--http-expose"), "\(fromFile.standardError)")
        for address in ["0.0.0.0:0", "[::]:4747", "pi-a.local:4747", "127.0.0.1.evil.example:4747"] {
            #expect(throws: CommandError.self, "\(address)") {
                try AgentConfiguration.resolve(dataDirectory: data, configFile: nil, name: nil, http: address, listen: nil,
                                               transports: nil, peers: [], subscriptions: [], environment: [:])
            }
        }
        for address in ["127.0.0.1:0", "127.4.5.6:4747", "localhost:4747", "[::1]:4747"] {
            #expect(throws: Never.self, "\(address)") {
                try AgentConfiguration.resolve(dataDirectory: data, configFile: nil, name: nil, http: address, listen: nil,
                                               transports: nil, peers: [], subscriptions: [], environment: [:])
            }
        }

        // Exposed on purpose (the agent is made, not served: nothing binds 0.0.0.0).
        var exposed = try AgentConfiguration.resolve(
            dataDirectory: data, configFile: nil, name: "exposed", http: "0.0.0.0:4747", httpExpose: true, listen: nil,
            transports: nil, peers: [], subscriptions: [], environment: [:]
        )
        #expect(exposed.httpExposed)
        let agent = try Agent(
            configuration: exposed, metricsFactory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry()),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        )
        let ready = try Value(json: agent.readyLine(http: "http://0.0.0.0:4747"))
        guard case .object(let fields) = ready, case .string(let audience)? = fields["exposed_to"] else {
            Issue.record("no exposed_to in \(ready)")
            return
        }
        #expect(audience.contains("anyone who can reach http://0.0.0.0:4747") && audience.contains((data as NSString).appendingPathComponent("api-token")), "\(audience)")
        #expect(!agent.readyLine(http: "http://0.0.0.0:4747").contains(agent.apiToken.hex))
        exposed.httpExposed = false
        #expect(throws: CommandError.self) { try exposed.checkHTTPExposure() }
    }
}
