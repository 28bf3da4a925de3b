import Hummingbird
import NIOCore

extension AgentHTTPAPI {
    /// Most lines one `GET /v1/logs` returns.
    static let mostLogLines = 100_000

    /// `GET /v1/logs[?lines=N]`: the last N lines (default 1000) of the agent's log files, oldest
    /// first, as plain text; 409 when the agent logs to the journal, saying how to read it.
    static func recentLogs(_ request: Request, logs: AgentLogs?) throws -> Response {
        var count = 1000
        if let text = try FormQuery(request.uri.query).get("lines") {
            guard let parsed = Int(text), (1...mostLogLines).contains(parsed) else {
                throw APIError(.badRequest, "lines must be a number from 1 to \(mostLogLines); got \(text.debugDescription)")
            }
            count = parsed
        }
        guard let logs else { throw APIError(.conflict, "this agent keeps no log files: its log is on standard error") }
        switch logs.recentLines(count) {
        case .failure(let error):
            throw APIError(.conflict, error.message)
        case .success(let lines):
            return Response(
                status: .ok, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: lines.map { $0 + "\n" }.joined()))
            )
        }
    }
}
