/// Lowercase hexadecimal, for keys and ids in logs, files and on the command line.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` spells, or nil unless it is an even number of hex digits (either case;
    /// whitespace around them, such as a file's last newline, is ignored).
    public static func decode(_ text: String) -> [UInt8]? {
        var nibbles: [UInt8] = []
        for scalar in text.trimmingWhitespace.unicodeScalars {
            guard let nibble = value(of: scalar) else { return nil }
            nibbles.append(nibble)
        }
        guard nibbles.count % 2 == 0 else { return nil }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    private static func value(of scalar: Unicode.Scalar) -> UInt8? {
        switch scalar {
        case "0"..."9": return UInt8(scalar.value - 48)
        case "a"..."f": return UInt8(scalar.value - 97 + 10)
        case "A"..."F": return UInt8(scalar.value - 65 + 10)
        default: return nil
        }
    }
}

private extension String {
    var trimmingWhitespace: Substring {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[start...end]
    }
}
