import ArcusCRDT
import ArcusCodec
import Foundation

/// The `_id` of a document being written: taken from its fields or generated, and checked.
enum DocumentIdentity {
    /// Removes `_id` from `fields` and returns it, or a fresh id when there is none.
    static func take(from fields: inout [String: Value]) throws -> Value {
        guard let id = fields.removeValue(forKey: "_id") else { return .string(generate()) }
        return try checked(id)
    }

    /// The `_id` in `fields`, checked, or a fresh id when there is none; `fields` stay as they
    /// are (copying a document's fields to take `_id` out cost more than writing it).
    static func id(in fields: [String: Value]) throws -> Value {
        guard let id = fields["_id"] else { return .string(generate()) }
        return try checked(id)
    }

    /// The rules are the codec's (`DocumentIDRules`): a document this store takes is one it can
    /// send to every peer, and one a peer may send it.
    private static func checked(_ id: Value) throws -> Value {
        if let problem = DocumentIDRules.problem(with: id) { throw StoreError.invalidDocument(problem) }
        return id
    }

    /// 24 hex digits like a MongoDB ObjectId: seconds since 1970, then 8 random bytes, so ids
    /// made later sort later and collide with negligible probability.
    static func generate() -> String {
        let seconds = UInt32(truncatingIfNeeded: Int(Date().timeIntervalSince1970))
        var bytes = withUnsafeBytes(of: seconds.bigEndian) { Array($0) }
        var random = SystemRandomNumberGenerator()
        withUnsafeBytes(of: random.next() as UInt64) { bytes.append(contentsOf: $0) }
        return bytes.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
