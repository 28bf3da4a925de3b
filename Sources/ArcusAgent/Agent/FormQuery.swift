import Foundation

/// A request's query string read as a form (application/x-www-form-urlencoded), the way browsers,
/// Python's `urlencode` and most HTTP tools write it: `+` is a space, `%2B` a plus. Read only as
/// percent-escapes, `?q=SELECT+*+FROM+cars` would reach DQL as `SELECT+*+FROM+cars`.
struct FormQuery {
    private var values: [String: String] = [:]
    /// Names whose value is not valid percent-encoded UTF-8.
    private(set) var malformed: Set<String> = []

    init(_ query: String?) {
        for pair in (query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else { continue }
            // The first of a repeated name counts, as Hummingbird's own reader has it.
            guard values[name] == nil, !malformed.contains(name) else { continue }
            if let value = Self.decode(parts.count > 1 ? parts[1] : "") { values[name] = value } else { malformed.insert(name) }
        }
    }

    /// The value of `name`; throws 400 when it is there but not valid percent-encoded UTF-8.
    func get(_ name: String) throws(APIError) -> String? {
        guard !malformed.contains(name) else {
            throw APIError(.badRequest, "the query parameter \(name) is not valid percent-encoded UTF-8")
        }
        return values[name]
    }

    /// `+` as a space, `%XX` as a byte; nil for a `%` not followed by two hex digits, or bytes
    /// that are not UTF-8. (Foundation's `removingPercentEncoding` lets a bad escape through on Linux.)
    private static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var input = text.utf8.makeIterator()
        while let byte = input.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = input.next().flatMap(hexValue), let low = input.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
