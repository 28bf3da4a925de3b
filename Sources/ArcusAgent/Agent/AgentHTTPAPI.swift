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
/// metrics. Every body is bounded and checked; every error is `{"error": "…"}` with a 4xx
/// status, and leaves the store as it was.
public enum AgentHTTPAPI {
    /// The largest request body read; larger ones get 413 before any of it is parsed.
    public static let maximumBodyBytes = 1 << 20

    /// The HTTP server over `agent`, as a service; `onReady` receives the bound address.
    public static func application(
        for agent: Agent, registry: PrometheusCollectorRegistry, logger: Logger,
        onReady: @escaping @Sendable (String) -> Void
    ) -> some Service {
        let router = Router()
        router.middlewares.add(JSONErrorMiddleware<BasicRequestContext>())
        addRoutes(to: router, agent: agent, registry: registry)
        let http = agent.configuration.http
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(http.host, port: http.port), serverName: "arcus-agent"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? http.port
                let host = http.host.contains(":") ? "[\(http.host)]" : http.host
                onReady("http://\(host):\(port)")
            },
            logger: logger
        )
    }

    static func addRoutes(to router: Router<BasicRequestContext>, agent: Agent, registry: PrometheusCollectorRegistry) {
        let startedAt = ContinuousClock.now
        router.get("/") { _, _ -> Response in
            StatusPage.response
        }
        router.get("/v1/status") { _, _ -> Response in
            JSONResponse.make(await StatusDocument(agent: agent, startedAt: startedAt).json().jsonString)
        }
        router.post("/v1/execute") { request, _ -> Response in
            let body = try await jsonObject(request)
            let statement = try string(body, "statement")
            let arguments = try object(body, "args")
            do {
                return JSONResponse.make(try agent.store.execute(statement, arguments: arguments).jsonString)
            } catch let error as DQLError {
                throw APIError(.badRequest, "error at \(error.description)")
            } catch let error as StoreError {
                throw APIError(.badRequest, "error: \(error.description)")
            }
        }
        router.get("/v1/observe") { request, _ -> Response in
            try observe(request, agent: agent)
        }
        router.get("/v1/subscriptions") { _, _ -> Response in
            JSONResponse.make(Value.object(["subscriptions": SubscriptionDocument.all(agent.engine)]).jsonString)
        }
        router.post("/v1/subscriptions") { request, _ -> Response in
            let body = try await jsonObject(request)
            let query = try string(body, "query")
            let arguments = try object(body, "args")
            do throws(CommandError) {
                return JSONResponse.make(json(try agent.subscribe(query, arguments: arguments)).jsonString, status: .created)
            } catch {
                throw APIError(.badRequest, error.message)
            }
        }
        router.delete("/v1/subscriptions/:id") { _, context -> Response in
            let text = context.parameters.get("id") ?? ""
            guard let id = UInt64(text) else { throw APIError(.badRequest, "a subscription id is a number, not \(text.debugDescription)") }
            guard agent.engine.cancelSubscription(id: id) else { throw APIError(.notFound, "no active subscription \(id)") }
            return JSONResponse.make(Value.object(["id": .int(Int64(id)), "cancelled": .bool(true)]).jsonString)
        }
        router.get("/v1/peers") { _, _ -> Response in
            JSONResponse.make(PeersDocument(graph: agent.presence.graph, local: agent.identity.peerID).json.jsonString)
        }
        router.get("/metrics") { _, _ -> Response in
            await agent.metrics.refresh(from: agent.engine)
            agent.metrics.pendingHandshakes(agent.pendingHandshakes.count)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
            )
        }
        addAttachmentRoutes(to: router, agent: agent)
    }

    static func json(_ entry: ArcusSync.SyncEngine.SubscriptionEntry) -> Value { .object(fields(entry)) }

    /// A subscription's number, query and arguments (those it has).
    static func fields(_ entry: ArcusSync.SyncEngine.SubscriptionEntry) -> [String: Value] {
        var object: [String: Value] = ["id": .int(Int64(entry.id)), "query": .string(entry.query.text)]
        if !entry.query.arguments.isEmpty { object["args"] = .object(entry.query.arguments) }
        return object
    }

    // MARK: - Request bodies

    static func jsonObject(_ request: Request) async throws -> [String: Value] {
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
        return object
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
