import Foundation

/// A 128-bit Bluetooth UUID. Written the usual way (big-endian, "8-4-4-4-12"); Bluetooth
/// advertising data and the management API carry it least significant byte first.
public struct BluetoothUUID: Sendable, Hashable, CustomStringConvertible {
    /// Big-endian, as written.
    public let bytes: [UInt8]

    public init(_ uuid: UUID) {
        bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    public init?(littleEndian bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes.reversed()
    }

    public var littleEndianBytes: [UInt8] { bytes.reversed() }

    public var description: String {
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex[hex.index(hex.startIndex, offsetBy: range.lowerBound)..<hex.index(hex.startIndex, offsetBy: range.upperBound)])
        }
        return parts.joined(separator: "-")
    }
}
