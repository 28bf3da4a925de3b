import Crypto

extension MeshCredential {
    /// 16 hex digits that agents of one mesh share and advertise (mDNS TXT), so that an agent can
    /// skip another mesh's without dialling it. Hashed with its own label from the shared secret's
    /// key, or from the authority's public key, so that it gives away nothing the handshake uses.
    public var meshHash: String {
        let source: [UInt8]
        switch self {
        case .sharedSecret(let secret): source = secret.presharedKey
        case .certificate(_, let authority): source = authority.bytes
        }
        return Hex.encode(SHA256.hash(data: Array("arcus mesh hash".utf8) + [0] + source).prefix(8))
    }
}
