/// A compiled `LIKE` pattern.
///
/// `%` matches any run of characters (none included), `_` exactly one Unicode scalar, and a
/// backslash makes the next character literal (`\%`, `\_`, `\\`; a trailing lone backslash is a
/// literal backslash). Every other character, regular-expression metacharacters included, matches
/// itself, case-sensitively. Matching works on the UTF-8 bytes without allocating and takes
/// at most O(pattern × text) steps (no exponential backtracking).
public struct DQLLikePattern: Sendable, Hashable {
    enum Element: Sendable, Hashable {
        case byte(UInt8)
        case anyScalar
        case anyRun
    }

    let elements: [Element]

    public init(_ pattern: String) {
        var elements: [Element] = []
        let bytes = Array(pattern.utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "%"):
                // Consecutive `%` mean the same as one.
                if elements.last != .anyRun { elements.append(.anyRun) }
            case UInt8(ascii: "_"):
                elements.append(.anyScalar)
            case UInt8(ascii: "\\") where i + 1 < bytes.count:
                i += 1
                elements.append(.byte(bytes[i]))
            default:
                elements.append(.byte(b))
            }
            i += 1
        }
        self.elements = elements
    }

    /// Whether the whole of `text` matches the pattern.
    public func matches(_ text: String) -> Bool {
        if let result = text.utf8.withContiguousStorageIfAvailable({ matches(bytes: $0) }) {
            return result
        }
        return Array(text.utf8).withUnsafeBufferPointer { matches(bytes: $0) }
    }

    /// The classic wildcard match: on a mismatch, go back to just after the last `%` and let it
    /// swallow one more scalar. Text positions stay on scalar boundaries because literal bytes
    /// start with a lead byte and `_` and `%` step over whole scalars.
    func matches(bytes s: UnsafeBufferPointer<UInt8>) -> Bool {
        let p = elements
        var i = 0
        var j = 0
        var starJ = -1
        var starI = 0
        while i < s.count {
            if j < p.count {
                switch p[j] {
                case .byte(let b) where s[i] == b:
                    i += 1
                    j += 1
                    continue
                case .anyScalar:
                    i += Self.scalarLength(s, at: i)
                    j += 1
                    continue
                case .anyRun:
                    starJ = j
                    starI = i
                    j += 1
                    continue
                default:
                    break
                }
            }
            guard starJ >= 0 else { return false }
            starI += Self.scalarLength(s, at: starI)
            i = starI
            j = starJ + 1
        }
        while j < p.count, p[j] == .anyRun { j += 1 }
        return j == p.count
    }

    /// The byte length of the scalar that starts at `i`, never past the end.
    static func scalarLength(_ s: UnsafeBufferPointer<UInt8>, at i: Int) -> Int {
        let b = s[i]
        let length = b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4
        return min(length, s.count - i)
    }
}
