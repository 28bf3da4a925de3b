/// Advertising data: a sequence of AD structures, each a length byte (counting the type), a type
/// byte and the data (Core Specification Supplement, part A). Parsed from untrusted bytes: a
/// structure that runs past the end is an error, a zero length ends the data (padding).
public struct AdvertisingData: Sendable, Hashable {
    public struct Structure: Sendable, Hashable {
        public var type: UInt8
        public var data: [UInt8]

        public init(type: UInt8, data: [UInt8]) {
            self.type = type
            self.data = data
        }
    }

    /// "Service Data - 128-bit UUID": the UUID (little-endian) and then the service's data.
    public static let serviceData128: UInt8 = 0x21
    /// "Complete List of 128-bit Service Class UUIDs".
    public static let completeUUIDs128: UInt8 = 0x07

    public var structures: [Structure]

    public init(_ structures: [Structure]) {
        self.structures = structures
    }

    public init(parsing bytes: [UInt8]) throws(ManagementError) {
        var structures: [Structure] = []
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            if length == 0 { break }
            guard offset + 1 + length <= bytes.count else {
                throw .malformed("an AD structure of \(length) bytes at offset \(offset) runs past the \(bytes.count) bytes of advertising data")
            }
            structures.append(Structure(type: bytes[offset + 1], data: Array(bytes[offset + 2..<offset + 1 + length])))
            offset += 1 + length
        }
        self.structures = structures
    }

    public var encoded: [UInt8] {
        structures.flatMap { [UInt8($0.data.count + 1), $0.type] + $0.data }
    }

    /// The data of the first Service Data structure for `uuid`, if any.
    public func serviceData(for uuid: BluetoothUUID) -> [UInt8]? {
        let prefix = uuid.littleEndianBytes
        return structures.first { $0.type == Self.serviceData128 && $0.data.starts(with: prefix) }.map { Array($0.data.dropFirst(16)) }
    }
}
