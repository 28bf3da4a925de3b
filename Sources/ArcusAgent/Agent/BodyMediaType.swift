import Foundation

/// A request's `Content-Type`, read as RFC 9110 writes it: `type/subtype` (case-insensitive),
/// then `; name=value` parameters, of which only `charset` matters here.
struct BodyMediaType: Equatable {
    /// `type/subtype`, lowercased.
    let essence: String
    /// The `charset` parameter, lowercased and unquoted, if given.
    let charset: String?

    init?(_ field: String?) {
        guard let field else { return nil }
        var parts = field.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let essence = parts.removeFirst()
        let halves = essence.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, !halves[0].isEmpty, !halves[1].isEmpty, !essence.contains(where: \.isWhitespace) else { return nil }
        self.essence = essence
        var charset: String?
        for parameter in parts where parameter.hasPrefix("charset=") {
            charset = String(parameter.dropFirst("charset=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        self.charset = charset
    }

    /// The types a web page may send to any origin without the browser asking it first (the
    /// CORS-safelisted ones): a body of one of these, or of none, may come from any page.
    static let sendableByAnyPage: Set<String> = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
}
