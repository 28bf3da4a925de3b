import CNATS

/// A failed NATS operation: what was being done, what libnats said, and what to check.
public struct NATSError: Error, Sendable, CustomStringConvertible {
    /// What was being done, e.g. "connecting to nats://127.0.0.1:4222".
    public let operation: String
    /// libnats' status code (`natsStatus`), or `nil` for errors found before calling libnats.
    public let statusCode: UInt32?
    /// libnats' own text: the last error of this thread, or the status' text.
    public let detail: String
    /// What a person should check or do, when known.
    public let hint: String?

    public init(operation: String, statusCode: UInt32? = nil, detail: String, hint: String? = nil) {
        self.operation = operation
        self.statusCode = statusCode
        self.detail = detail
        self.hint = hint
    }

    /// The `natsStatus` behind this error, if any.
    public var status: natsStatus? { statusCode.map { natsStatus(rawValue: $0) } }

    public var description: String {
        var text = "\(operation): \(detail)"
        if let hint { text += " — \(hint)" }
        return text
    }

    /// Builds the error for `status`, reading libnats' thread-local last error text, which
    /// names the cause more precisely than the status (e.g. "Authorization Violation").
    init(_ status: natsStatus, while operation: String, hint: String? = nil) {
        var lastStatus = NATS_OK
        let lastError = nats_GetLastError(&lastStatus).map { String(cString: $0) } ?? ""
        let statusText = natsStatus_GetText(status).map { String(cString: $0) } ?? "status \(status.rawValue)"
        let detail = lastError.isEmpty ? statusText : Self.withoutSourceLocation(lastError)
        self.init(
            operation: operation,
            statusCode: status.rawValue,
            detail: detail,
            hint: hint ?? Self.hint(for: status, detail: detail)
        )
    }

    /// libnats prefixes its errors with where they were raised, "(conn.c:1905): ", which
    /// means nothing to the person reading the error.
    private static func withoutSourceLocation(_ text: String) -> String {
        let characters = Array(text)
        guard characters.first == "(", let close = characters.firstIndex(of: ")"),
            characters[..<close].contains(":"), characters[(close + 1)...].starts(with: ": ")
        else { return text }
        return String(characters[(close + 3)...])
    }

    private static func hint(for status: natsStatus, detail: String) -> String? {
        let lowered = detail.lowercased()
        if status == NATS_CONNECTION_AUTH_FAILED || status == NATS_NOT_PERMITTED
            || lowered.contains("authorization") || lowered.contains("authentication")
        {
            return "check the user and password in the relay URL (nats://USER:PASSWORD@HOST:PORT), the token, or the credentials file (cloud_credentials_file)"
        }
        switch status {
        case NATS_NO_SERVER:
            return "no NATS server answered: check that nats-server runs at that address and is reachable, or set retryOnFailedConnect to wait for it"
        case NATS_SSL_ERROR, NATS_SECURE_CONNECTION_REQUIRED:
            return "the server requires TLS or its certificate was not trusted: set tls, with caFile naming the CA that signed the server's certificate"
        case NATS_SECURE_CONNECTION_WANTED:
            return "TLS was asked for but the server does not offer it: start nats-server with --tls, or drop the tls option"
        case NATS_TIMEOUT:
            return "the server did not answer in time: check the network and the server's load"
        case NATS_CONNECTION_CLOSED:
            return "the connection was closed: create a new NATSConnection"
        case NATS_INVALID_SUBJECT:
            return "subjects are dot-separated tokens without spaces; '*' and '>' are wildcards for subscriptions only"
        case NATS_MAX_PAYLOAD:
            return "the payload exceeds the server's max_payload: send smaller messages"
        default:
            return nil
        }
    }
}

/// Throws `NATSError` unless `status` is `NATS_OK`.
@inline(__always)
func check(_ status: natsStatus, _ operation: @autoclosure () -> String, hint: String? = nil) throws(NATSError) {
    guard status == NATS_OK else { throw NATSError(status, while: operation(), hint: hint) }
}
