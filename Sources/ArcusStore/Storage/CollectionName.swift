/// What a collection's name may be, whichever way a document arrives (DQL, the builder API, an
/// attachment upload, a peer's sync): 1 to 256 bytes of UTF-8 without control characters, so
/// that every name can be printed, logged and typed back into a statement.
public enum CollectionName {
    /// The longest name, in UTF-8 bytes.
    public static let maximumBytes = 256

    /// Why `name` cannot name a collection, or nil when it can.
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "a collection name cannot be empty" }
        if name.utf8.count > maximumBytes { return "a collection name has at most \(maximumBytes) bytes; this one has \(name.utf8.count)" }
        if let control = name.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            let code = String(control.value, radix: 16, uppercase: true)
            return "collection \(name.debugDescription) holds a control character (U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code)); name it with printable characters"
        }
        return nil
    }

    /// Throws `StoreError.invalidDocument` when `name` cannot name a collection.
    /// Runs on every document written: printable ASCII, what nearly every name is, passes on
    /// a byte scan; only other names pay for the Unicode property lookup.
    static func check(_ name: String) throws(StoreError) {
        let bytes = name.utf8
        if !bytes.isEmpty, bytes.count <= maximumBytes, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return }
        if let problem = problem(name) { throw .invalidDocument(problem) }
    }
}
