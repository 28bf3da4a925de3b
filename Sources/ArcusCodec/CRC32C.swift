/// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), as used by iSCSI, ext4 and SCTP.
/// Slicing-by-8 tables: about a byte per cycle without hardware support.
public enum CRC32C {
    private static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][i] = crc
        }
        for i in 0..<256 {
            for t in 1..<8 {
                let previous = tables[t - 1][i]
                tables[t][i] = (previous >> 8) ^ tables[0][Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    public static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        update(0, bytes)
    }

    /// Continues a checksum over more bytes.
    public static func update(_ crc: UInt32, _ bytes: some Collection<UInt8>) -> UInt32 {
        if let result = bytes.withContiguousStorageIfAvailable({ update(crc, UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return update(crc, Array(bytes))
    }

    public static func update(_ crc: UInt32, _ buffer: UnsafeRawBufferPointer) -> UInt32 {
        var c = ~crc
        var i = 0
        let n = buffer.count
        tables.withUnsafeBufferPointer { t in
            let t0 = t[0], t1 = t[1], t2 = t[2], t3 = t[3], t4 = t[4], t5 = t[5], t6 = t[6], t7 = t[7]
            while n - i >= 8 {
                let lo = UInt32(buffer[i]) | UInt32(buffer[i + 1]) << 8 | UInt32(buffer[i + 2]) << 16 | UInt32(buffer[i + 3]) << 24
                let hi = UInt32(buffer[i + 4]) | UInt32(buffer[i + 5]) << 8 | UInt32(buffer[i + 6]) << 16 | UInt32(buffer[i + 7]) << 24
                let x = c ^ lo
                c = t7[Int(x & 0xFF)] ^ t6[Int((x >> 8) & 0xFF)] ^ t5[Int((x >> 16) & 0xFF)] ^ t4[Int(x >> 24)]
                    ^ t3[Int(hi & 0xFF)] ^ t2[Int((hi >> 8) & 0xFF)] ^ t1[Int((hi >> 16) & 0xFF)] ^ t0[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                c = (c >> 8) ^ t0[Int((c ^ UInt32(buffer[i])) & 0xFF)]
                i += 1
            }
        }
        return ~c
    }
}
