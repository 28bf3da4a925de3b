import ArcusCRDT
import Hummingbird

/// Who the HTTP API answers, checked on every request before any route runs (Docs/Agent.md,
/// "API authentication"). Coming from 127.0.0.1 proves nothing: any local user, container or web
/// page in a browser on the device can connect there. So, in order:
///
/// 1. `Host` must name this agent (`ServedHosts`), else 421: a page that re-pointed its own name
///    at 127.0.0.1 (DNS rebinding) is addressed to that name.
/// 2. A browser's request must come from the agent's own pages: an `Origin` other than
///    `http://<Host>` is refused (403), whatever the method; so is `Sec-Fetch-Site` other than
///    `same-origin` or `none` (typed in the address bar), except a top-level navigation to the
///    status page, which holds no data.
/// 3. Every route but the status page wants `Authorization: Bearer <token>` (401 without it),
///    compared in constant time. The token is never in a URL, a cookie or an answer, so a page
///    on another origin cannot make the browser send it.
struct APIAccessMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: APIToken
    let hosts: ServedHosts
    /// Where the token is, for the 401's message.
    let tokenFile: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try checkHost(request)
        try checkSite(request)
        if !AgentHTTPAPI.isPage(method: request.method.rawValue, path: request.uri.path) { try checkToken(request) }
        return try await next(request, context)
    }

    static var hostField: HeaderName { HeaderName("Host")! }
    static var secFetchSite: HeaderName { HeaderName("Sec-Fetch-Site")! }
    static var secFetchMode: HeaderName { HeaderName("Sec-Fetch-Mode")! }
    static var secFetchDest: HeaderName { HeaderName("Sec-Fetch-Dest")! }

    private func checkHost(_ request: Request) throws {
        // HTTP/1 puts the first Host in `authority`; a second one stays among the fields.
        guard let authority = request.head.authority, request.headers[values: Self.hostField].isEmpty else {
            throw APIError(.misdirectedRequest, """
                the request must carry exactly one Host header naming this agent, such as Host: 127.0.0.1:4747
                """)
        }
        guard hosts.allows(authority: authority) else {
            let exposed: String
            switch hosts.exposure {
            case .none: exposed = "to serve other names, the agent must be started with --http HOST:PORT --http-expose"
            case .host(let name): exposed = "nor \(name), the address it was exposed on"
            case .anyAddress: exposed = "nor an IP address of this machine, where it was exposed"
            }
            throw APIError(.misdirectedRequest, """
                this agent answers requests addressed to it as localhost, 127.0.0.1 or [::1] (any port), \
                not to Host \(Self.quoted(authority)); \(exposed). A web page that points a name of its own \
                at this machine (DNS rebinding) is refused this way (Docs/Agent.md, API authentication)
                """)
        }
    }

    private func checkSite(_ request: Request) throws {
        let origins = request.headers[values: .origin]
        if !origins.isEmpty {
            // The Host was checked above; a browser's Origin for the agent's own page is exactly it.
            let own = "http://" + (request.head.authority ?? "").lowercased()
            guard origins.count == 1, origins[0].lowercased() == own else {
                throw APIError(.forbidden, """
                    refused: this request comes from a web page of origin \(Self.quoted(origins.joined(separator: ", "))), \
                    and the API answers only its own pages (\(own)); a page elsewhere can neither read nor change \
                    the store (Docs/Agent.md, API authentication)
                    """)
            }
        }
        if let site = request.headers[Self.secFetchSite]?.lowercased(), site != "same-origin", site != "none" {
            let navigation = request.headers[Self.secFetchMode] == "navigate" && request.headers[Self.secFetchDest] == "document"
            guard navigation && AgentHTTPAPI.isPage(method: request.method.rawValue, path: request.uri.path) else {
                throw APIError(.forbidden, """
                    refused: the browser says this request comes from another site (Sec-Fetch-Site: \(Self.quoted(site))); \
                    the API answers only its own pages (Docs/Agent.md, API authentication)
                    """)
            }
        }
    }

    private func checkToken(_ request: Request) throws {
        let whereTheTokenIs = """
            The token is in \(tokenFile), readable only by the agent's user; the arcus CLI finds it by itself when run \
            as that user (or give it --token-file FILE or ARCUS_TOKEN), and `arcus status --page` prints a link that \
            opens the status page with it (Docs/Agent.md, API authentication)
            """
        let fields = request.headers[values: .authorization]
        guard !fields.isEmpty else {
            throw APIError(.unauthorized, "this route needs the agent's API token, as the header Authorization: Bearer <token>. " + whereTheTokenIs,
                           headers: Self.challenge)
        }
        guard fields.count == 1, let presented = Self.bearer(fields[0]), token.matches(presented) else {
            // Never echo what was sent: it may be a token of another agent.
            throw APIError(.unauthorized, "the Authorization header does not carry this agent's API token (Bearer <64 hex digits>). " + whereTheTokenIs,
                           headers: Self.challenge)
        }
    }

    static var challenge: HTTPFields { [.wwwAuthenticate: #"Bearer realm="arcus""#] }

    /// The credentials of `Bearer <credentials>` (the scheme in any case).
    static func bearer(_ field: String) -> Substring? {
        let text = field[...].drop(while: { $0 == " " })
        guard text.count > 7, text.prefix(7).lowercased() == "bearer " else { return nil }
        let credentials = text.dropFirst(7).drop(while: { $0 == " " })
        return credentials.isEmpty ? nil : credentials
    }

    /// `text` as a JSON string, cut to 200 characters: it came from the request.
    static func quoted(_ text: String) -> String {
        Value.string(text.count > 200 ? String(text.prefix(200)) + "…" : text).jsonString
    }
}

/// Headers every answer carries, whatever it is: no browser may sniff a JSON answer into a
/// script, embed the status page in a frame, or hand an answer to a page of another origin that
/// loaded it with `<img>` or `<script>` (`Cross-Origin-Resource-Policy`); no answer is cached.
struct ResponseHardeningMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[HeaderName("Cross-Origin-Resource-Policy")!] = "same-origin"
        response.headers[HeaderName("X-Frame-Options")!] = "DENY"
        response.headers[HeaderName("Referrer-Policy")!] = "no-referrer"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}

/// A header's name (HTTPTypes' `HTTPField.Name`, which Hummingbird does not re-export by name).
typealias HeaderName = HTTPFields.Element.Name
