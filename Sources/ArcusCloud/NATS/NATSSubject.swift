import CNATS

/// Subject checks that libnats leaves to the server: a space in a published subject would be
/// read by the server as a reply subject, silently routing the message elsewhere.
enum NATSSubject {
    /// Throws unless `subject` is dot-separated non-empty tokens without whitespace; wildcards
    /// (`*` as a token, `>` as the last token) only when `allowsWildcards`.
    static func validate(_ subject: String, allowsWildcards: Bool, while operation: @autoclosure () -> String) throws(NATSError) {
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        var problem: String?
        if subject.isEmpty {
            problem = "the subject is empty"
        } else if subject.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true }) {
            problem = "the subject \"\(subject)\" contains whitespace or control characters"
        } else if tokens.contains(where: \.isEmpty) {
            problem = "the subject \"\(subject)\" has an empty token (leading, trailing or double dot)"
        } else if !allowsWildcards, tokens.contains(where: { $0 == "*" || $0 == ">" }) {
            problem = "the subject \"\(subject)\" has a wildcard, which only subscriptions may use"
        } else if let fullWildcard = tokens.firstIndex(of: ">"), fullWildcard != tokens.count - 1 {
            problem = "in \"\(subject)\", \">\" may only be the last token"
        }
        if let problem {
            throw NATSError(
                operation: operation(), statusCode: NATS_INVALID_SUBJECT.rawValue, detail: problem,
                hint: "subjects are dot-separated tokens such as arcus.mesh.peer1")
        }
    }
}
