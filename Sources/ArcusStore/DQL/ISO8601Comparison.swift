/// An instant read from an ISO 8601 date or date-time string, so that such strings compare by
/// the time they denote rather than by their text.
///
/// Recognised forms (a string must match one of them entirely):
///
///     YYYY-MM-DD                                   midnight UTC of that day
///     YYYY-MM-DD(T|t| )hh:mm[:ss[(.|,)fraction]][zone]
///     zone = Z | z | (+|-)hh[[:]mm]                no zone means UTC
///
/// Years are 0000–9999, months and days are checked against the calendar (leap years included),
/// hours 00–23, minutes 00–59, seconds 00–60 (a leap second counts as the next second), zone
/// offsets up to ±23:59. Fraction digits beyond nanoseconds are ignored. Anything else is not a
/// date and compares as an ordinary string. Reading does not allocate and uses no Foundation.
public struct ISO8601Instant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01T00:00:00Z (negative before).
    public var seconds: Int64
    /// Nanoseconds into that second, 0 ..< 1_000_000_000.
    public var nanoseconds: Int32

    public init(seconds: Int64, nanoseconds: Int32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// The instant `text` denotes, or `nil` when it is not one of the recognised forms.
    public init?(_ text: String) {
        let utf8 = text.utf8
        // Cheap rejection of the common case (words, ids) before touching storage.
        guard utf8.count >= 10, let first = utf8.first, first >= 0x30, first <= 0x39 else { return nil }
        let parsed = utf8.withContiguousStorageIfAvailable { ISO8601Instant.parse($0) }
            ?? Array(utf8).withUnsafeBufferPointer { ISO8601Instant.parse($0) }
        guard let parsed else { return nil }
        self = parsed
    }

    public static func < (a: ISO8601Instant, b: ISO8601Instant) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }

    public var description: String { "\(seconds)s+\(nanoseconds)ns" }

    static func parse(_ u: UnsafeBufferPointer<UInt8>) -> ISO8601Instant? {
        let n = u.count
        guard n >= 10, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"),
            let year = digits(u, 0, 4), let month = digits(u, 5, 2), let day = digits(u, 8, 2),
            (1...12).contains(month), day >= 1, day <= daysInMonth(year, month)
        else { return nil }
        let days = daysFromCivil(year, month, day)
        if n == 10 { return ISO8601Instant(seconds: days * 86_400, nanoseconds: 0) }

        // Time of day.
        let separator = u[10]
        guard separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t") || separator == 0x20,
            n >= 16, u[13] == UInt8(ascii: ":"),
            let hour = digits(u, 11, 2), let minute = digits(u, 14, 2), hour < 24, minute < 60
        else { return nil }
        var i = 16
        var second: Int64 = 0
        var nanos: Int64 = 0
        if i < n, u[i] == UInt8(ascii: ":") {
            guard let s = digits(u, i + 1, 2), s <= 60 else { return nil }
            second = s
            i += 3
            if i < n, u[i] == UInt8(ascii: ".") || u[i] == UInt8(ascii: ",") {
                i += 1
                let fractionStart = i
                var scale: Int64 = 100_000_000
                while i < n, u[i] >= 0x30, u[i] <= 0x39 {
                    nanos += Int64(u[i] - 0x30) * scale
                    scale /= 10
                    i += 1
                }
                guard i > fractionStart else { return nil }
            }
        }

        // Zone.
        var offsetSeconds: Int64 = 0
        if i < n {
            switch u[i] {
            case UInt8(ascii: "Z"), UInt8(ascii: "z"):
                i += 1
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                let sign: Int64 = u[i] == UInt8(ascii: "+") ? 1 : -1
                guard let offsetHours = digits(u, i + 1, 2), offsetHours < 24 else { return nil }
                i += 3
                var offsetMinutes: Int64 = 0
                if i < n {
                    if u[i] == UInt8(ascii: ":") { i += 1 }
                    guard let m = digits(u, i, 2), m < 60 else { return nil }
                    offsetMinutes = m
                    i += 2
                }
                offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            default:
                return nil
            }
        }
        guard i == n else { return nil }
        let local = days * 86_400 + hour * 3600 + minute * 60 + second
        return ISO8601Instant(seconds: local - offsetSeconds, nanoseconds: Int32(nanos))
    }

    /// `count` decimal digits at `start`, or `nil` if any is missing or not a digit.
    private static func digits(_ u: UnsafeBufferPointer<UInt8>, _ start: Int, _ count: Int) -> Int64? {
        guard start >= 0, start + count <= u.count else { return nil }
        var value: Int64 = 0
        for i in start..<start + count {
            let c = u[i]
            guard c >= 0x30, c <= 0x39 else { return nil }
            value = value * 10 + Int64(c - 0x30)
        }
        return value
    }

    private static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
