import Crypto

extension MeshCredential {
    /// The mesh identifier: 16 hex digits that agents of one mesh share and advertise — in mDNS
    /// TXT (all 16), Bluetooth LE adverts (the first 8) and NATS subjects (all 16) — so that an
    /// agent can skip another mesh's peers without dialling them. Every advertising and matching
    /// site takes it from here.
    ///
    /// It is HKDF-SHA256 under the label "arcus mesh identifier" of the shared secret's bytes, or
    /// of the authority's public key: a one-way function of the credential, independent of the
    /// handshake's pre-shared key, so it gives away nothing the handshake uses. A stranger can
    /// test guesses of the secret against it offline, which is why `MeshSecret` accepts only
    /// secrets worth 128 bits (Docs/Security.md, "Shared secrets"). It is the same for every
    /// peer and does not change, so it links a mesh's adverts over time; the peer id beside it in
    /// every advert does that anyway.
    public var meshHash: String {
        switch self {
        case .sharedSecret(let secret):
            return Hex.encode(secret.identifier)
        case .certificate(_, let authority):
            let identifier = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: authority.bytes), salt: MeshSecret.identifierLabel, info: [UInt8](), outputByteCount: 8
            )
            return identifier.withUnsafeBytes { Hex.encode($0) }
        }
    }
}
