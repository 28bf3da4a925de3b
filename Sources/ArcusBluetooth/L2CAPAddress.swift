import CBlueZ

/// Where an L2CAP LE channel ends: an adapter or device address, its LE address type, and the
/// PSM (the channel's "port"; 0 when binding asks the kernel for a dynamic one).
public struct L2CAPAddress: Sendable, Hashable, CustomStringConvertible {
    /// LE devices have either a public (IEEE-assigned) or a random address; a connect needs the
    /// right one, since the same six bytes may name two devices.
    public enum AddressType: Sendable, Hashable {
        case lePublic, leRandom

        var kernelValue: UInt8 { UInt8(self == .lePublic ? BDADDR_LE_PUBLIC : BDADDR_LE_RANDOM) }
    }

    /// The six bytes as written, most significant first ("AA:..." is bytes[0] == 0xAA).
    public let bytes: [UInt8]
    public var type: AddressType
    public var psm: UInt16

    /// LE PSMs the kernel hands out dynamically (Core spec, Vol 3 Part A, 4.22).
    public static let dynamicPSMs: ClosedRange<UInt16> = 0x80...0xFF

    /// The wildcard address of the given type: bind on any adapter.
    public static func any(type: AddressType = .lePublic, psm: UInt16 = 0) -> L2CAPAddress {
        L2CAPAddress(validBytes: [0, 0, 0, 0, 0, 0], type: type, psm: psm)
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (hex, either case); nil for anything else.
    public init?(_ text: String, type: AddressType = .lePublic, psm: UInt16 = 0) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(validBytes: bytes, type: type, psm: psm)
    }

    private init(validBytes: [UInt8], type: AddressType, psm: UInt16) {
        self.bytes = validBytes
        self.type = type
        self.psm = psm
    }

    /// "AA:BB:CC:DD:EE:FF".
    public var text: String {
        bytes.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 0x10 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    public var description: String {
        "\(text) (\(type == .lePublic ? "public" : "random")) psm 0x\(String(psm, radix: 16))"
    }

    // MARK: sockaddr_l2

    /// The kernel's form: bdaddr_t holds the bytes least significant first, the PSM little-endian.
    var sockaddr: sockaddr_l2 {
        var address = sockaddr_l2()
        address.l2_family = sa_family_t(AF_BLUETOOTH)
        address.l2_psm = arcus_htobs(psm)
        address.l2_bdaddr = bdaddr_t(b: (bytes[5], bytes[4], bytes[3], bytes[2], bytes[1], bytes[0]))
        address.l2_bdaddr_type = type.kernelValue
        return address
    }

    init(_ address: sockaddr_l2) {
        let b = address.l2_bdaddr.b
        self.init(
            validBytes: [b.5, b.4, b.3, b.2, b.1, b.0],
            type: address.l2_bdaddr_type == UInt8(BDADDR_LE_RANDOM) ? .leRandom : .lePublic,
            psm: arcus_btohs(address.l2_psm)
        )
    }
}
