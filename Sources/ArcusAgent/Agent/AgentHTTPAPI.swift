import ArcusCRDT
import ArcusStore
import ArcusSync
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// The agent's local HTTP API (Docs/Agent.md): DQL, observers as server-sent events,
/// subscriptions, the presence graph, the agent's status (as JSON and as a page), Prometheus
/// metrics. Every request passes `APIAccessMiddleware` first (its Host, its Origin, the token);
/// every body is bounded and checked; every error is `{"error": "…"}` with a 4xx status, and
/// leaves the store as it was.
public enum AgentHTTPAPI {
    /// The largest request body read; larger ones get 413 before any of it is parsed.
    public static let maximumBodyBytes = 1 << 20

    /// The HTTP server over `agent`, as a service; `onReady` receives the bound address. Once it
    /// listens, it keeps a copy of the agent's token for the user running it (`UserTokenFiles`),
    /// which it removes when it stops.
    public static func application(
        for agent: Agent, registry: PrometheusCollectorRegistry, logger: Logger, logs: AgentLogs? = nil,
        onReady: @escaping @Sendable (String) -> Void
    ) -> some Service {
        let router = Router()
        let http = agent.configuration.http
        // Middlewares apply to the routes added after them: these come first.
        router.middlewares.add(ResponseHardeningMiddleware<BasicRequestContext>())
        router.middlewares.add(JSONErrorMiddleware<BasicRequestContext>())
        router.middlewares.add(APIAccessMiddleware<BasicRequestContext>(
            token: agent.apiToken, hosts: ServedHosts(http: http.host, exposed: agent.configuration.httpExposed),
            tokenFile: APITokenFile.path(in: agent.configuration.dataDirectory)
        ))
        addRoutes(to: router, agent: agent, registry: registry, logs: logs)
        let handoff = UserTokenHandoff(token: agent.apiToken, logger: logger)
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(http.host, port: http.port), serverName: "arcus-agent"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? http.port
                handoff.publish(host: http.host, port: port)
                let host = http.host.contains(":") ? "[\(http.host)]" : http.host
                onReady("http://\(host):\(port)")
            },
            logger: logger
        )
        return UserTokenHandoff.Service(application: application, handoff: handoff)
    }

    /// Registers `route`'s handler; `route` must be one of `routes`, which the access checks and
    /// the tests read.
    static func add(
        _ route: AgentHTTPRoute, to router: Router<BasicRequestContext>,
        _ handler: @escaping @Sendable (Request, BasicRequestContext) async throws -> Response
    ) {
        precondition(routes.contains(route), "\(route) is not in AgentHTTPAPI.routes: list it there with its access")
        router.on(RouterPath(route.path), method: HTTPRequest.Method(route.method)!, use: handler)
    }

    static func addRoutes(to router: Router<BasicRequestContext>, agent: Agent, registry: PrometheusCollectorRegistry, logs: AgentLogs?) {
        let startedAt = ContinuousClock.now
        add(.page, to: router) { _, _ in
            StatusPage.response
        }
        add(.status, to: router) { _, _ in
            JSONResponse.make(await StatusDocument(agent: agent, startedAt: startedAt).json().jsonString)
        }
        add(.openapi, to: router) { _, _ in
            JSONResponse.make(AgentOpenAPI.json)
        }
        add(.execute, to: router) { request, _ in
            let body = try await jsonObject(request, keys: ["statement", "args", "wait_synced", "timeout"])
            let statement = try string(body, "statement")
            let arguments = try object(body, "args")
            let wait = try syncedWait(body, agent: agent)
            do {
                let result = try await agent.execute(statement, arguments: arguments)
                guard let wait else { return JSONResponse.make(result.jsonString) }
                return try await answer(result, after: wait, engine: agent.engine)
            } catch let error as DQLError {
                throw APIError(.badRequest, "error at \(error.description)")
            } catch let error as StoreError {
                throw APIError(.badRequest, "error: \(error.description)")
            }
        }
        add(.observe, to: router) { request, _ in
            try observe(request, agent: agent)
        }
        add(.subscriptions, to: router) { _, _ in
            JSONResponse.make(Value.object(["subscriptions": SubscriptionDocument.all(agent)]).jsonString)
        }
        add(.subscribe, to: router) { request, _ in
            let body = try await jsonObject(request, keys: ["query", "args"])
            let query = try string(body, "query")
            let arguments = try object(body, "args")
            do throws(CommandError) {
                return JSONResponse.make(json(try agent.subscribe(query, arguments: arguments)).jsonString, status: .created)
            } catch {
                throw APIError(.badRequest, error.message)
            }
        }
        add(.unsubscribe, to: router) { _, context in
            let text = context.parameters.get("id") ?? ""
            guard let id = UInt64(text) else { throw APIError(.badRequest, "a subscription id is a number, not \(text.debugDescription)") }
            guard agent.engine.cancelSubscription(id: id) else { throw APIError(.notFound, "no active subscription \(id)") }
            return JSONResponse.make(Value.object(["id": .int(Int64(id)), "cancelled": .bool(true)]).jsonString)
        }
        add(.peers, to: router) { _, _ in
            JSONResponse.make(PeersDocument(graph: agent.presence.graph, local: agent.identity.peerID, admissions: agent.admission.decisions).json.jsonString)
        }
        add(.metrics, to: router) { _, _ in
            await agent.metrics.refresh(from: agent.engine)
            agent.metrics.pendingHandshakes(agent.pendingHandshakes.count)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
            )
        }
        add(.logs, to: router) { request, _ in
            try recentLogs(request, logs: logs)
        }
        addAttachmentRoutes(to: router, agent: agent)
        addMeshRoutes(to: router, agent: agent)
    }

    static func json(_ entry: ArcusSync.SyncEngine.SubscriptionEntry) -> Value { .object(fields(entry)) }

    /// A subscription's number, query and arguments (those it has).
    static func fields(_ entry: ArcusSync.SyncEngine.SubscriptionEntry) -> [String: Value] {
        var object: [String: Value] = ["id": .int(Int64(entry.id)), "query": .string(entry.query.text)]
        if !entry.query.arguments.isEmpty { object["args"] = .object(entry.query.arguments) }
        return object
    }

    // MARK: - Request bodies

    /// The body as a JSON object. Only a body sent as `application/json` (a `charset`, if any,
    /// `utf-8`) is read: a web page can send `text/plain` or a form to any address without the
    /// browser asking first, but not `application/json`, so a body that may have come from a page
    /// is refused before it is parsed (415).
    static func jsonObject(_ request: Request, keys: Set<String>) async throws -> [String: Value] {
        let type = BodyMediaType(request.headers[.contentType])
        guard type?.essence == "application/json", type?.charset.map({ $0 == "utf-8" || $0 == "utf8" }) ?? true else {
            let sent = request.headers[.contentType].map { "Content-Type: \($0)" } ?? "no Content-Type"
            throw APIError(.unsupportedMediaType, "the body must be JSON, sent with the header Content-Type: application/json (this request has \(sent))")
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumBodyBytes {
            throw APIError(.contentTooLarge, "the body has \(length) bytes; at most \(maximumBodyBytes) are read")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maximumBodyBytes)
        } catch {
            throw APIError(.contentTooLarge, "the body exceeds \(maximumBodyBytes) bytes")
        }
        let value: Value
        do {
            value = try Value(jsonBytes: buffer.readableBytesView)
        } catch let error as JSONError {
            throw APIError(.badRequest, "the body is not valid JSON: \(error.description)")
        }
        guard case .object(let object) = value else { throw APIError(.badRequest, "the body must be a JSON object") }
        // A misspelt key would otherwise be ignored: `wait_synce` would quietly not wait.
        if let unknown = object.keys.filter({ !keys.contains($0) }).sorted().first {
            throw APIError(.badRequest, "the body has \"\(unknown)\", which this route does not take; it takes \(keys.sorted().map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        return object
    }

    /// The body's `wait_synced` (peer ids or names) and `timeout` (seconds, default 30), if any.
    static func syncedWait(_ body: [String: Value], agent: Agent) throws -> SyncedWait? {
        let timeout = try syncedTimeout(body)
        let names: [String]
        switch body["wait_synced"] {
        case nil, .null?:
            guard timeout == nil else { throw APIError(.badRequest, "\"timeout\" is how long to wait for the peers in \"wait_synced\", which this body lacks") }
            return nil
        case .array(let items)?:
            names = try items.map { item in
                guard case .string(let name) = item else { throw APIError(.badRequest, "\"wait_synced\" must be an array of peer ids or names") }
                return name
            }
        default: throw APIError(.badRequest, "\"wait_synced\" must be an array of peer ids or names, such as [\"truck-7\"]")
        }
        do throws(CommandError) {
            return try SyncedWait(peers: names, timeout: timeout ?? SyncedWait.defaultTimeout, graph: agent.presence.graph)
        } catch {
            throw APIError(.badRequest, error.message)
        }
    }

    /// The body's `timeout`, in seconds, if it has one.
    static func syncedTimeout(_ body: [String: Value]) throws -> Duration? {
        switch body["timeout"] {
        case nil, .null?: return nil
        case .int(let seconds)?: return .seconds(seconds)
        case .double(let seconds)? where seconds.isFinite && abs(seconds) < 1e9: return .milliseconds(Int64(seconds * 1000))
        default: throw APIError(.badRequest, "\"timeout\" must be a number of seconds")
        }
    }

    /// A write's result once every peer `wait` names holds it; else 504 with who does not and
    /// why (the write is committed either way, and the answer says so).
    static func answer(_ result: QueryResult, after wait: SyncedWait, engine: SyncEngine) async throws -> Response {
        var fields = result.json
        let unheld = try await wait.unheld(result.writtenDocuments, engine: engine)
        guard !unheld.isEmpty else {
            fields["synced"] = .array(wait.targets.map { .string($0.named) })
            return JSONResponse.make(Value.object(fields).jsonString)
        }
        let reasons = unheld.map { "\($0.0.named) \(SyncedWait.reason($0.1))" }
        fields["error"] = .string("committed here as commit \(result.commitID ?? 0), but not yet held by every peer named after \(wait.timeout.inSeconds) s: " + reasons.joined(separator: "; "))
        fields["unsynced"] = .array(unheld.map { .string($0.0.named) })
        return JSONResponse.make(Value.object(fields).jsonString, status: .gatewayTimeout)
    }

    static func string(_ body: [String: Value], _ key: String) throws -> String {
        guard let value = body[key] else { throw APIError(.badRequest, "the body needs \"\(key)\", a string") }
        guard case .string(let text) = value else { throw APIError(.badRequest, "\"\(key)\" must be a string") }
        return text
    }

    static func object(_ body: [String: Value], _ key: String) throws -> [String: Value] {
        switch body[key] {
        case nil, .null?: return [:]
        case .object(let object)?: return object
        default: throw APIError(.badRequest, "\"\(key)\" must be a JSON object of arguments, such as {\"color\": \"blue\"}")
        }
    }
}
