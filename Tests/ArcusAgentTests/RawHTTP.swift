import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 exchange written byte for byte over a TCP connection to 127.0.0.1, for the
/// requests an HTTP client library would not send as a hostile one does: a foreign or missing
/// `Host`, two of them, any `Origin`. The request goes with `Connection: close`; the answer is
/// read until the server closes.
struct RawHTTP {
    struct Answer: CustomStringConvertible {
        var status: Int
        var head: String
        var body: String
        func header(_ name: String) -> String? {
            head.split(separator: "\r\n").dropFirst().first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
                .map { String($0.drop(while: { $0 != ":" }).dropFirst()).trimmingCharacters(in: .whitespaces) }
        }
        var error: String? {
            guard let data = body.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            return object["error"] as? String
        }
        var description: String { "\(status) \(body.prefix(400))" }
    }

    /// `method path` to `127.0.0.1:port` with `headers` (in order, as given: no Host unless one is
    /// among them) and `body` (with its Content-Length).
    static func exchange(port: Int, _ method: String, _ path: String, headers: [(String, String)], body: String? = nil) async throws -> Answer {
        var text = "\(method) \(path) HTTP/1.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "Connection: close\r\n\r\n" + (body ?? "")
        let request = text
        // A blocking socket, on a thread of its own: the cooperative pool stays free.
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try send(request, port: port) }) }.start()
        }
    }

    private static func send(_ request: String, port: Int) throws -> Answer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ArcusProcess.ProcessError("socket: \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ArcusProcess.ProcessError("connect to 127.0.0.1:\(port): errno \(errno)") }
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw ArcusProcess.ProcessError("send: errno \(errno)") }
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw ArcusProcess.ProcessError("no HTTP answer: \(text.prefix(200))") }
        let head = String(text[..<split.lowerBound])
        var body = String(text[split.upperBound...])
        let statusLine = head.split(separator: "\r\n").first ?? ""
        guard let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw ArcusProcess.ProcessError("no status in \(statusLine)")
        }
        // Hummingbird answers with Content-Length, or chunks: undo the chunking.
        if head.lowercased().contains("transfer-encoding: chunked") { body = unchunked(body) }
        return Answer(status: status, head: head, body: body)
    }

    private static func unchunked(_ text: String) -> String {
        var rest = Substring(text)
        var body = ""
        while let end = rest.range(of: "\r\n"), let size = Int(rest[..<end.lowerBound], radix: 16), size > 0 {
            let start = end.upperBound
            let utf8 = rest[start...].utf8
            let chunkEnd = utf8.index(utf8.startIndex, offsetBy: size)
            body += String(rest[start..<chunkEnd])
            rest = rest[chunkEnd...].dropFirst(2)
        }
        return body
    }
}
