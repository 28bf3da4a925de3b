import Foundation

/// One test vector of a protocol the mesh's handshake state runs, in the Noise wiki's JSON
/// format (as cacophony and snow publish them): both sides' prologue, static and ephemeral
/// private keys and pre-shared keys, then each message's payload and expected ciphertext — the
/// handshake messages first, then transport messages, alternating from the initiator — and,
/// optionally, the handshake hash.
struct NoiseTestVector: Sendable {
    /// The keys and prologue one side starts with.
    struct Side: Sendable {
        var prologue: [UInt8]
        var staticKey: [UInt8]
        var ephemeralKey: [UInt8]
        var presharedKeys: [[UInt8]]
    }

    struct Message: Sendable {
        var payload: [UInt8]
        var ciphertext: [UInt8]
    }

    /// Where the vector is in its file, from 1.
    var number: Int
    var protocolName: String
    /// The `source` field, when the file names where the vector came from.
    var source: String?
    var pattern: NoiseHandshakePattern
    var initiator: Side
    var responder: Side
    var handshakeHash: [UInt8]?
    var messages: [Message]

    /// "vector 2 (Noise_XX_25519_ChaChaPoly_SHA256, from …)", for reports.
    var title: String {
        "vector \(number) (\(protocolName)\(source.map { ", from \($0)" } ?? ""))"
    }

    /// Reads the fields of `object`, the vector numbered `number`, whose protocol uses `pattern`.
    /// Throws a sentence naming the first field that is missing or malformed.
    init(_ object: [String: Any], number: Int, protocolName: String, pattern: NoiseHandshakePattern) throws(NoiseTestVector.Unreadable) {
        self.number = number
        self.protocolName = protocolName
        self.pattern = pattern
        source = object["source"] as? String
        initiator = try Self.side("init", of: object, pattern: pattern)
        responder = try Self.side("resp", of: object, pattern: pattern)
        handshakeHash = try object["handshake_hash"].map { value throws(Unreadable) in try Self.hex(value, field: "handshake_hash", size: 32) }
        guard let list = object["messages"] as? [Any] else { throw Unreadable("the field messages is missing or not a list") }
        guard list.count >= pattern.messages.count else {
            throw Unreadable("it has \(list.count) messages; the \(pattern) handshake alone has \(pattern.messages.count)")
        }
        var messages: [Message] = []
        for (index, item) in list.enumerated() {
            guard let message = item as? [String: Any] else { throw Unreadable("message \(index) is not an object") }
            messages.append(Message(
                payload: try Self.hex(message["payload"], field: "messages[\(index)].payload"),
                ciphertext: try Self.hex(message["ciphertext"], field: "messages[\(index)].ciphertext")
            ))
        }
        self.messages = messages
    }

    /// Why a vector of a protocol the mesh runs cannot be run: which field is wrong.
    struct Unreadable: Error, Sendable, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private static func side(_ prefix: String, of object: [String: Any], pattern: NoiseHandshakePattern) throws(Unreadable) -> Side {
        let presharedKeys: [[UInt8]]
        switch object["\(prefix)_psks"] {
        case nil: presharedKeys = []
        case let list as [Any]:
            presharedKeys = try list.enumerated().map { index, key throws(Unreadable) in try hex(key, field: "\(prefix)_psks[\(index)]", size: 32) }
        default: throw Unreadable("the field \(prefix)_psks is not a list")
        }
        guard presharedKeys.count == pattern.presharedKeyCount else {
            throw Unreadable("\(prefix)_psks lists \(presharedKeys.count); \(pattern) takes \(pattern.presharedKeyCount) pre-shared keys")
        }
        return Side(
            prologue: try hex(object["\(prefix)_prologue"] ?? "", field: "\(prefix)_prologue"),
            staticKey: try hex(object["\(prefix)_static"], field: "\(prefix)_static", size: 32),
            ephemeralKey: try hex(object["\(prefix)_ephemeral"], field: "\(prefix)_ephemeral", size: 32),
            presharedKeys: presharedKeys
        )
    }

    /// The bytes the hex string `value` spells; `size`, when given, is the length they must have.
    private static func hex(_ value: Any?, field: String, size: Int? = nil) throws(Unreadable) -> [UInt8] {
        guard let value else { throw Unreadable("the field \(field) is missing") }
        guard let text = value as? String else { throw Unreadable("the field \(field) is not a string") }
        guard let bytes = Hex.decode(text) else { throw Unreadable("the field \(field) is not hex digits") }
        if let size, bytes.count != size { throw Unreadable("the field \(field) holds \(bytes.count) bytes, not \(size)") }
        return bytes
    }
}
