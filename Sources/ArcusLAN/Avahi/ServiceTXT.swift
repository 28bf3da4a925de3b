/// What an Arcus agent says about itself in its `_arcus._tcp` TXT record: who it is, which mesh it
/// belongs to and which protocol it speaks. Read from the network, so every field is checked and
/// every size bounded before it is believed; it is a hint for whom to dial, never proof (only the
/// session handshake binds a peer id to a key).
public struct ServiceTXT: Sendable, Hashable {
    /// The peer id, as 32 lowercase hex digits (a 128-bit `PeerID`).
    public var peer: String
    /// A hash of the mesh id, as 16 lowercase hex digits: enough to skip agents of other meshes
    /// without telling the LAN which mesh this is.
    public var meshHash: String
    /// The sync protocol version the agent speaks.
    public var protocolVersion: UInt16

    public init(peer: String, meshHash: String, protocolVersion: UInt16) {
        self.peer = peer
        self.meshHash = meshHash
        self.protocolVersion = protocolVersion
    }

    /// Bounds on what we read from the network: DNS-SD allows 255 bytes per string and a few
    /// kilobytes per record; ours needs three short strings, so anything much bigger is not ours.
    public static let maximumEntries = 16
    public static let maximumEntryBytes = 255
    public static let maximumTotalBytes = 1300

    static let peerKey = "id"
    static let meshKey = "mesh"
    static let versionKey = "v"
    static let peerHexDigits = 32
    static let meshHexDigits = 16

    /// The TXT strings to publish, `key=value`, in a fixed order.
    public var entries: [[UInt8]] {
        [
            Array("\(Self.peerKey)=\(peer)".utf8),
            Array("\(Self.meshKey)=\(meshHash)".utf8),
            Array("\(Self.versionKey)=\(protocolVersion)".utf8),
        ]
    }

    /// Reads a record from its raw TXT strings. Unknown keys are skipped, so later versions can
    /// add fields; anything else out of shape is refused with the reason.
    public init(entries: [[UInt8]]) throws(MalformedTXT) {
        guard entries.count <= Self.maximumEntries else {
            throw MalformedTXT("\(entries.count) TXT strings, more than \(Self.maximumEntries)")
        }
        let total = entries.reduce(0) { $0 + $1.count }
        guard total <= Self.maximumTotalBytes else {
            throw MalformedTXT("\(total) bytes of TXT, more than \(Self.maximumTotalBytes)")
        }
        var values: [String: String] = [:]
        for entry in entries {
            guard entry.count <= Self.maximumEntryBytes else {
                throw MalformedTXT("a TXT string of \(entry.count) bytes, more than \(Self.maximumEntryBytes)")
            }
            // RFC 6763 §6.4: the key is what comes before the first "="; a string without one is
            // a boolean attribute, which we do not use.
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            guard let key = String(validating: entry[..<equals], as: UTF8.self)?.lowercased(),
                  let value = String(validating: entry[(equals + 1)...], as: UTF8.self)
            else { throw MalformedTXT("a TXT string that is not UTF-8") }
            guard [Self.peerKey, Self.meshKey, Self.versionKey].contains(key) else { continue }
            guard values[key] == nil else { throw MalformedTXT("the key \"\(key)\" twice") }
            values[key] = value
        }
        guard let peer = values[Self.peerKey] else { throw MalformedTXT("no peer id (\"\(Self.peerKey)\")") }
        guard Self.isLowercaseHex(peer, digits: Self.peerHexDigits) else {
            throw MalformedTXT("peer id \"\(peer.prefix(40))\" is not \(Self.peerHexDigits) lowercase hex digits")
        }
        guard let mesh = values[Self.meshKey] else { throw MalformedTXT("no mesh hash (\"\(Self.meshKey)\")") }
        guard Self.isLowercaseHex(mesh, digits: Self.meshHexDigits) else {
            throw MalformedTXT("mesh hash \"\(mesh.prefix(40))\" is not \(Self.meshHexDigits) lowercase hex digits")
        }
        guard let versionText = values[Self.versionKey] else {
            throw MalformedTXT("no protocol version (\"\(Self.versionKey)\")")
        }
        guard versionText.utf8.count <= 5, versionText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let version = UInt16(versionText), version > 0
        else { throw MalformedTXT("protocol version \"\(versionText.prefix(40))\" is not a number from 1 to 65535") }
        self.init(peer: peer, meshHash: mesh, protocolVersion: version)
    }

    static func isLowercaseHex(_ text: String, digits: Int) -> Bool {
        text.utf8.count == digits
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// Why a TXT record from the network was not believed.
public struct MalformedTXT: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
