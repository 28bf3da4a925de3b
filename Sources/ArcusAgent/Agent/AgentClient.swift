import ArcusCRDT
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The CLI's side of the HTTP API: `arcus exec --agent`, `observe`, `subscribe`, `peers`, `status`,
/// `attachment`, `field-test`. Every request carries the agent's token, found as
/// `AgentCredential` says.
/// Errors are `CommandError`s: the agent's own `{"error": …}` message (exit status 2; for a
/// refused token, with what to do), or that no agent answers at the URL and how to start one
/// (exit status 1).
public struct AgentClient: Sendable {
    public let baseURL: String
    /// The token sent, if one was found, and what to say when the agent refuses it.
    public let credential: AgentCredential

    /// - Parameter tokenFile: `--token-file`, a file holding the agent's token.
    public init(
        url: String, tokenFile: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CommandError) {
        var text = url.trimmingCharacters(in: .whitespaces)
        while text.hasSuffix("/") { text.removeLast() }
        guard let parsed = URL(string: text), parsed.scheme == "http", parsed.host != nil else {
            throw CommandError("--agent \(url.debugDescription) is not an http:// URL, such as http://127.0.0.1:4747", exitStatus: 2)
        }
        baseURL = text
        credential = try AgentCredential.resolve(url: parsed, tokenFile: tokenFile, environment: environment)
    }

    /// Adds the token, when there is one.
    private func authorized(_ request: HTTPClientRequest) -> HTTPClientRequest {
        var request = request
        if let token = credential.token { request.headers.replaceOrAdd(name: "Authorization", value: "Bearer " + token.hex) }
        return request
    }

    /// Connection failures are reported at once: the pool's default is to retry establishing
    /// a refused connection until the request's deadline, which for "no agent there" is just a
    /// long wait before the same answer. Redirects are not followed: the agent never sends one,
    /// and following it would carry the token to wherever it points.
    private static var configuration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(10)
        configuration.redirectConfiguration = .disallow
        return configuration
    }

    /// `POST /v1/execute`: the same JSON `arcus exec --data` prints.
    public func execute(_ statement: String, arguments: [String: Value]) async throws(CommandError) -> String {
        let body = Value.object(["statement": .string(statement), "args": .object(arguments)]).jsonString
        return try await send(.POST, "/v1/execute", body: body)
    }

    /// `POST /v1/execute` with `wait_synced`: answers once every peer in `peers` (ids or names)
    /// holds what the statement wrote, or fails after `timeout` seconds saying which do not.
    public func execute(_ statement: String, arguments: [String: Value], waitSynced peers: [String], timeout: Double) async throws(CommandError) -> String {
        let body = Value.object([
            "statement": .string(statement), "args": .object(arguments),
            "wait_synced": .array(peers.map { .string($0) }), "timeout": .double(timeout),
        ]).jsonString
        return try await send(.POST, "/v1/execute", body: body, timeout: .milliseconds(Int64(timeout * 1000) + 60_000))
    }

    /// `POST /v1/subscriptions`: `{"id": …, "query": …}`.
    public func subscribe(_ query: String, arguments: [String: Value]) async throws(CommandError) -> String {
        let body = Value.object(["query": .string(query), "args": .object(arguments)]).jsonString
        return try await send(.POST, "/v1/subscriptions", body: body)
    }

    /// `GET /v1/subscriptions`: the active subscriptions, each with its sync progress per peer.
    public func subscriptions() async throws(CommandError) -> String {
        try await send(.GET, "/v1/subscriptions", body: nil)
    }

    /// `GET /v1/peers`: the presence graph, as JSON.
    public func peers() async throws(CommandError) -> String {
        try await send(.GET, "/v1/peers", body: nil)
    }

    /// `GET /v1/logs?lines=N`: the last lines of the agent's log files, as text.
    public func logs(lines: Int) async throws(CommandError) -> String {
        try await send(.GET, "/v1/logs?lines=\(lines)", body: nil)
    }

    /// `GET /v1/status`: the agent at a glance, as JSON.
    public func status() async throws(CommandError) -> String {
        try await send(.GET, "/v1/status", body: nil)
    }

    /// `POST /v1/mesh/revocations`: hands the agent the authority's revocation list (its bytes).
    public func publishRevocations(_ list: [UInt8]) async throws(CommandError) -> String {
        let body = Value.object(["list": .string(Data(list).base64EncodedString())]).jsonString
        return try await send(.POST, "/v1/mesh/revocations", body: body)
    }

    /// `GET /metrics`: the agent's figures as Prometheus text.
    public func metrics() async throws(CommandError) -> String {
        try await send(.GET, "/metrics", body: nil)
    }

    /// `POST /v1/attachments`: stores the file at `path` (streamed, not read whole) as an
    /// attachment in field `field` of document `id` of `collection`; the token as JSON.
    public func putAttachment(path: String, collection: String, id: String, field: String) async throws(CommandError) -> String {
        let length: Int64
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard attributes[.type] as? FileAttributeType != .typeDirectory else {
                throw CommandError("\(path) is a directory; give a file", exitStatus: 2)
            }
            length = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError("cannot read \(path): check that the file exists and is readable", exitStatus: 2)
        }
        guard let input = FileHandle(forReadingAtPath: path) else {
            throw CommandError("cannot read \(path): check that the file exists and is readable", exitStatus: 2)
        }
        defer { try? input.close() }
        let pieces = AsyncThrowingStream<ByteBuffer, any Error>(unfolding: {
            guard let data = try input.read(upToCount: 1 << 16), !data.isEmpty else { return nil }
            return ByteBuffer(bytes: data)
        })
        let name = URL(fileURLWithPath: path).lastPathComponent
        var request = HTTPClientRequest(url: url("/v1/attachments", ["collection": collection, "id": id, "field": field, "name": name]))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .stream(pieces, length: .known(length))
        return try await answer(to: request, timeout: .seconds(3600))
    }

    /// What `GET /v1/attachments/{hash}` answered.
    public enum AttachmentDownload: Sendable {
        /// The blob, written to the file given, of this many bytes.
        case written(Int64)
        /// The agent is fetching it from peers: `{"hash", "state", "bytes_fetched", "total_bytes"}`.
        case fetching(String)
    }

    /// `GET /v1/attachments/{hash}`: writes the blob to `file` (created or truncated) when the
    /// agent has it; otherwise the fetch's progress, the agent fetching it meanwhile.
    public func downloadAttachment(_ hash: String, to file: String) async throws(CommandError) -> AttachmentDownload {
        let request = authorized(HTTPClientRequest(url: baseURL + "/v1/attachments/" + (hash.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? hash)))
        let result: Result<AttachmentDownload, CommandError>
        do {
            result = try await HTTPClient.withHTTPClient(configuration: Self.configuration) { client in
                let response = try await client.execute(request, timeout: .seconds(3600))
                guard response.status == .ok else {
                    let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
                    guard response.status == .accepted else { return .failure(failure(status: response.status, body: text)) }
                    return .success(.fetching(text.trimmingCharacters(in: .newlines)))
                }
                guard FileManager.default.createFile(atPath: file, contents: nil), let output = FileHandle(forWritingAtPath: file) else {
                    return .failure(CommandError("cannot write \(file): check that its directory exists and is writable"))
                }
                defer { try? output.close() }
                var written: Int64 = 0
                for try await buffer in response.body {
                    try output.write(contentsOf: buffer.readableBytesView)
                    written += Int64(buffer.readableBytes)
                }
                try output.synchronize()
                return .success(.written(written))
            }
        } catch {
            throw unreachable(error)
        }
        return try result.get()
    }

    /// `GET /v1/attachments`: `{"fetches": [{hash, state, bytes_fetched, total_bytes, source}, …]}`.
    public func attachmentFetches() async throws(CommandError) -> String {
        try await send(.GET, "/v1/attachments", body: nil)
    }

    /// `baseURL + path` with `query`, "+" escaped too (a server reads it as a space).
    private func url(_ path: String, _ query: [String: String]) -> String {
        var components = URLComponents(string: baseURL + path)!
        components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        return components.url!.absoluteString.replacingOccurrences(of: "+", with: "%2B")
    }

    /// `GET /v1/observe`: hands each event's JSON to `line` until the agent ends the stream or
    /// the task is cancelled.
    public func observe(_ query: String, arguments: [String: Value], line: @Sendable (String) -> Void) async throws(CommandError) {
        var components = URLComponents(string: baseURL + "/v1/observe")!
        components.queryItems = [URLQueryItem(name: "q", value: query)]
        if !arguments.isEmpty { components.queryItems?.append(URLQueryItem(name: "args", value: Value.object(arguments).jsonString)) }
        // URLComponents leaves "+" alone, which a server reads as a space.
        let url = components.url!.absoluteString.replacingOccurrences(of: "+", with: "%2B")
        var request = authorized(HTTPClientRequest(url: url))
        request.headers.add(name: "Accept", value: "text/event-stream")
        do {
            try await HTTPClient.withHTTPClient(configuration: Self.configuration) { client in
                let response = try await client.execute(request, timeout: .hours(24 * 365))
                guard response.status == .ok else {
                    let body = try await response.body.collect(upTo: 1 << 20)
                    throw failure(status: response.status, body: String(buffer: body))
                }
                var pending = ""
                for try await buffer in response.body {
                    pending += String(buffer: buffer)
                    while let end = pending.range(of: "\n\n") {
                        let event = pending[..<end.lowerBound]
                        pending.removeSubrange(..<end.upperBound)
                        for field in event.split(separator: "\n") where field.hasPrefix("data: ") {
                            line(String(field.dropFirst(6)))
                        }
                    }
                }
            }
        } catch let error as CommandError {
            throw error
        } catch is CancellationError {
            return
        } catch {
            if Task.isCancelled { return }
            throw unreachable(error)
        }
    }

    private func send(_ method: HTTPMethod, _ path: String, body: String?, timeout: TimeAmount = .seconds(60)) async throws(CommandError) -> String {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        return try await answer(to: request, timeout: timeout)
    }

    /// The body of a 2xx answer to `request` (at most 64 MiB, without its last newline); any
    /// other status is the agent's error.
    private func answer(to request: HTTPClientRequest, timeout: TimeAmount) async throws(CommandError) -> String {
        let request = authorized(request)
        let (status, text): (HTTPResponseStatus, String)
        do {
            (status, text) = try await HTTPClient.withHTTPClient(configuration: Self.configuration) { client in
                let response = try await client.execute(request, timeout: timeout)
                return (response.status, String(buffer: try await response.body.collect(upTo: 64 << 20)))
            }
        } catch {
            throw unreachable(error)
        }
        guard (200..<300).contains(status.code) else { throw failure(status: status, body: text) }
        return text.trimmingCharacters(in: .newlines)
    }

    private func unreachable(_ error: any Error) -> CommandError {
        CommandError("no agent at \(baseURL) (\(error)): start one with `arcus agent --data DIR`")
    }

    /// The agent's `{"error": …}` message, and for a refused token what to do about it; a 4xx is
    /// the request's fault (exit status 2).
    private func failure(status: HTTPResponseStatus, body: String) -> CommandError {
        var message = body.trimmingCharacters(in: .whitespacesAndNewlines)
        if case .object(let object)? = try? Value(json: message), case .string(let text)? = object["error"] { message = text }
        if message.isEmpty { message = "the agent answered \(status)" }
        if status == .unauthorized { message += "\n" + credential.hint }
        return CommandError(message, exitStatus: (400..<500).contains(status.code) ? 2 : 1)
    }
}
