import Foundation

/// How hard a mesh secret is to guess, estimated in bits from what the secret looks like. The
/// advertised mesh identifier lets anyone in radio range test a guess offline, as fast as they can
/// hash, so a secret must be out of reach of guessing, not merely long (`MeshSecret.minimumStrength`).
///
/// The estimate, and why (Docs/Security.md, "Shared secrets"):
/// - **Bytes** (anything that is not printable UTF-8 text): what a random generator writes, such
///   as `arcus mesh secret`. Each byte is worth at most 8 bits, and no more than the empirical
///   entropy of the byte values, so a file of zeros or of a few repeated values is worth little.
/// - **Hex digits** (text of 0-9 and a-f, either case, whitespace around it ignored): at most 4
///   bits a digit, by the same empirical measure.
/// - **A passphrase** (any other text): people choose words, not characters, so it is worth at
///   most one random draw from a 7,776-word list (12.9 bits, as diceware) per distinct word —
///   or 4.7 bits a letter for words shorter than three letters. An English sentence is worth far
///   less than this bound, which is why a passphrase needs ten distinct words or more.
///
/// For bytes and hex digits a pattern repeated counts once: only the shortest period is counted.
public struct SecretStrength: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case bytes, hexDigits
        /// Text judged by its words; `words` is how many distinct ones it holds.
        case passphrase(words: Int)
    }

    public let kind: Kind
    /// The estimated number of guesses it takes, as a power of two.
    public let bits: Int

    public init(of secret: some Collection<UInt8>) {
        let bytes = Array(secret)
        guard let text = Self.text(bytes) else {
            kind = .bytes
            bits = Self.symbolBits(bytes, perSymbol: 8)
            return
        }
        let trimmed = text.trimmingASCIIWhitespace
        if !trimmed.isEmpty && trimmed.utf8.allSatisfy(\.isHexDigit) {
            kind = .hexDigits
            bits = Self.symbolBits(Array(trimmed.lowercased().utf8), perSymbol: 4)
            return
        }
        let words = Set(Self.words(of: text))
        kind = .passphrase(words: words.count)
        bits = Int(words.reduce(0.0) { $0 + min(Self.bitsPerWord, Self.bitsPerLetter * Double($1.count)) })
    }

    /// One draw from a 7,776-word (diceware) list.
    static let bitsPerWord = 12.925
    /// One of 26 letters.
    static let bitsPerLetter = 4.7

    public var description: String {
        switch kind {
        case .bytes: return "about \(bits) bits, read as bytes"
        case .hexDigits: return "about \(bits) bits, read as hex digits"
        case .passphrase(let words):
            return "about \(bits) bits, read as a passphrase of \(words) distinct word\(words == 1 ? "" : "s") (at most 12.9 bits a word)"
        }
    }

    // MARK: Estimates

    /// The secret as text, if it is UTF-8 with no control characters but tab and line breaks.
    private static func text(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        // Decoding replaces what is not UTF-8; then the bytes are not text.
        guard text.utf8.elementsEqual(bytes) else { return nil }
        let allowed: Set<Unicode.Scalar> = ["\t", "\n", "\r"]
        guard text.unicodeScalars.allSatisfy({ !$0.properties.generalCategory.isControl || allowed.contains($0) }) else { return nil }
        return text
    }

    /// `symbols` counted once per period, each worth its empirical entropy (the Shannon entropy
    /// of how often each value occurs) and at most `perSymbol` bits.
    private static func symbolBits(_ symbols: [UInt8], perSymbol: Double) -> Int {
        let period = Array(symbols.prefix(shortestPeriod(of: symbols)))
        guard !period.isEmpty else { return 0 }
        var counts: [UInt8: Int] = [:]
        for symbol in period { counts[symbol, default: 0] += 1 }
        let total = Double(period.count)
        let entropy = counts.values.reduce(0.0) { sum, count in
            let share = Double(count) / total
            return sum - share * log2(share)
        }
        return Int(min(perSymbol, entropy) * total)
    }

    /// The smallest p such that every symbol equals the one p before it (the Knuth-Morris-Pratt
    /// failure function): `symbols.count` when there is no repetition.
    private static func shortestPeriod(of symbols: [UInt8]) -> Int {
        guard !symbols.isEmpty else { return 0 }
        var border = [Int](repeating: 0, count: symbols.count)
        var length = 0
        for index in 1..<symbols.count {
            while length > 0 && symbols[index] != symbols[length] { length = border[length - 1] }
            if symbols[index] == symbols[length] { length += 1 }
            border[index] = length
        }
        return symbols.count - border[symbols.count - 1]
    }

    /// Runs of letters and digits, lowercased: "Correct-horse battery" holds three.
    private static func words(of text: String) -> [String] {
        text.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }
}

private extension UInt8 {
    var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x61...0x66).contains(self) || (0x41...0x46).contains(self)
    }
}

private extension Unicode.GeneralCategory {
    var isControl: Bool { self == .control || self == .format || self == .surrogate || self == .privateUse || self == .unassigned }
}

private extension String {
    var trimmingASCIIWhitespace: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[start...end]
    }
}
