/// One packet on the kernel's Bluetooth management socket (BlueZ doc/mgmt-api.txt, "Packet
/// Structures"): a command or an event code, the controller index (`nonController` for
/// commands and events about no controller), and the parameters, every field little-endian.
///
///     0        2                4                  6
///     | code   | controller     | parameter length | parameters …
public struct ManagementPacket: Sendable, Hashable {
    /// The index that means "no controller".
    public static let nonController: UInt16 = 0xFFFF
    public static let headerSize = 6

    public var code: UInt16
    public var controller: UInt16
    public var parameters: [UInt8]

    public init(code: UInt16, controller: UInt16, parameters: [UInt8] = []) {
        precondition(parameters.count <= Int(UInt16.max), "management parameters are at most 65,535 bytes")
        self.code = code
        self.controller = controller
        self.parameters = parameters
    }

    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerSize + parameters.count)
        bytes.appendLittleEndian(code)
        bytes.appendLittleEndian(controller)
        bytes.appendLittleEndian(UInt16(parameters.count))
        bytes += parameters
        return bytes
    }

    /// Reads one packet as the socket delivers it (one per read): the length field must match
    /// what follows the header exactly.
    public init(parsing bytes: [UInt8]) throws(ManagementError) {
        var reader = LittleEndianReader(bytes)
        let code = try reader.uint16(), controller = try reader.uint16(), length = Int(try reader.uint16())
        guard reader.remaining == length else {
            throw .malformed("a packet says \(length) parameter bytes and carries \(reader.remaining)")
        }
        self.init(code: code, controller: controller, parameters: try reader.bytes(length))
    }
}

/// Reads little-endian fields off untrusted bytes, every read bounded by what is there.
struct LittleEndianReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func uint8() throws(ManagementError) -> UInt8 {
        guard remaining >= 1 else { throw .malformed("a field runs past the end of the packet") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() throws(ManagementError) -> UInt16 {
        let low = try uint8(), high = try uint8()
        return UInt16(low) | UInt16(high) << 8
    }

    mutating func uint32() throws(ManagementError) -> UInt32 {
        let low = try uint16(), high = try uint16()
        return UInt32(low) | UInt32(high) << 16
    }

    mutating func bytes(_ count: Int) throws(ManagementError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .malformed("a field of \(count) bytes runs past the end of the packet") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian(_ value: UInt16) {
        append(UInt8(value & 0xFF))
        append(UInt8(value >> 8))
    }

    mutating func appendLittleEndian(_ value: UInt32) {
        appendLittleEndian(UInt16(value & 0xFFFF))
        appendLittleEndian(UInt16(value >> 16))
    }
}
