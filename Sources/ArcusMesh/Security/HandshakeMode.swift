/// The two ways of proving membership, as the first handshake message names them.
public enum HandshakeMode: UInt8, Sendable, CustomStringConvertible {
    case sharedSecret = 1
    case certificate = 2

    public var description: String {
        switch self {
        case .sharedSecret: return "a shared mesh secret"
        case .certificate: return "a certificate"
        }
    }
}
