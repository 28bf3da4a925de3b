import CBlueZ

/// How much an L2CAP channel's link must be protected before data flows (BT_SECURITY).
public enum BluetoothSecurityLevel: Sendable, Hashable {
    /// No encryption: anyone in range may connect and read.
    case low
    /// Encrypted, pairing without MITM protection (Just Works).
    case medium
    /// Encrypted and authenticated pairing (MITM protected).
    case high

    var kernelValue: UInt8 {
        switch self {
        case .low: return UInt8(BT_SECURITY_LOW)
        case .medium: return UInt8(BT_SECURITY_MEDIUM)
        case .high: return UInt8(BT_SECURITY_HIGH)
        }
    }
}
