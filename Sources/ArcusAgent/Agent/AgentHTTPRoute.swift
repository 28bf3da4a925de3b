/// One route of the agent's HTTP API and who may use it. `AgentHTTPAPI.routes` lists every route
/// the server has: a route is registered only through its entry there (registering one that is
/// not listed stops the agent at start), so the list, which the tests walk, cannot fall behind.
public struct AgentHTTPRoute: Sendable, Hashable, CustomStringConvertible {
    public enum Access: Sendable, Hashable {
        /// Served without the token: it holds no data (the status page's HTML and script).
        case page
        /// Reads or writes the store, the mesh or the agent's figures: wants the token.
        case data
    }

    /// The HTTP method, uppercase.
    public let method: String
    /// The path, with `:name` for a parameter.
    public let path: String
    public let access: Access

    init(_ method: String, _ path: String, _ access: Access) {
        precondition(access == .data || !path.contains(":"), "a page route is an exact path")
        self.method = method
        self.path = path
        self.access = access
    }

    public var description: String { "\(method) \(path)" }

    static let page = AgentHTTPRoute("GET", "/", .page)
    static let status = AgentHTTPRoute("GET", "/v1/status", .data)
    /// The API described in OpenAPI 3.1 (`AgentOpenAPI`), which lists every route here.
    static let openapi = AgentHTTPRoute("GET", "/v1/openapi.json", .data)
    static let execute = AgentHTTPRoute("POST", "/v1/execute", .data)
    static let observe = AgentHTTPRoute("GET", "/v1/observe", .data)
    static let subscriptions = AgentHTTPRoute("GET", "/v1/subscriptions", .data)
    static let subscribe = AgentHTTPRoute("POST", "/v1/subscriptions", .data)
    static let unsubscribe = AgentHTTPRoute("DELETE", "/v1/subscriptions/:id", .data)
    static let peers = AgentHTTPRoute("GET", "/v1/peers", .data)
    // Prometheus text holds no document, but it tells traffic, peers and links; Prometheus sends a
    // bearer token (`authorization: {credentials_file: …}`), so a scraper is not locked out.
    static let metrics = AgentHTTPRoute("GET", "/metrics", .data)
    static let upload = AgentHTTPRoute("POST", "/v1/attachments", .data)
    static let fetches = AgentHTTPRoute("GET", "/v1/attachments", .data)
    static let download = AgentHTTPRoute("GET", "/v1/attachments/:hash", .data)
    static let revocations = AgentHTTPRoute("POST", "/v1/mesh/revocations", .data)
    /// The last lines of the agent's log files; the log tells peers, addresses and queries.
    static let logs = AgentHTTPRoute("GET", "/v1/logs", .data)
}

extension AgentHTTPAPI {
    /// Every route of the API.
    public static let routes: [AgentHTTPRoute] = [
        .page, .status, .execute, .observe, .subscriptions, .subscribe, .unsubscribe, .peers, .metrics, .upload, .fetches, .download,
        .revocations, .openapi, .logs,
    ]

    /// The methods the API serves at `path` (a `:name` segment of a route matches any one
    /// segment), for the `Allow` header of a 405; empty when no route has that path.
    static func methods(at path: String) -> [String] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let methods = routes.filter { route in
            let pattern = route.path.split(separator: "/", omittingEmptySubsequences: false)
            return pattern.count == segments.count && zip(pattern, segments).allSatisfy { $0.hasPrefix(":") ? !$1.isEmpty : $0 == $1 }
        }.map(\.method)
        return Array(Set(methods)).sorted()
    }

    /// Whether `method path` is a route served without the token.
    static func isPage(method: String, path: String) -> Bool {
        routes.contains { $0.access == .page && $0.method == method && $0.path == path }
    }
}
