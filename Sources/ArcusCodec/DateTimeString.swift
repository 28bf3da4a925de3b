/// Canonical UTC date-time strings (`2026-03-04T10:05:00Z`, `2026-03-04T10:05:00.250Z`) travel
/// as a number of seconds or milliseconds: 5–6 bytes instead of 21–25. Only strings that format
/// back byte for byte are recognised; anything else stays a string.
enum DateTimeString {
    /// Years 1970 through 9999.
    static let maximumSeconds: UInt64 = 253_402_300_800
    /// Bytes of the strings `format(seconds:)` and `format(milliseconds:)` make.
    static let secondsLength = 20, millisecondsLength = 24

    static func seconds(_ s: String) -> UInt64? {
        var s = s
        return s.withUTF8 { u in
            guard u.count == 20, u[19] == UInt8(ascii: "Z") else { return nil }
            return parseDateTime(u)
        }
    }

    static func milliseconds(_ s: String) -> UInt64? {
        var s = s
        return s.withUTF8 { u in
            guard u.count == 24, u[19] == UInt8(ascii: "."), u[23] == UInt8(ascii: "Z"),
                let seconds = parseDateTime(u),
                let millis = digits(u, 20, 3)
            else { return nil }
            return seconds * 1000 + millis
        }
    }

    static func format(seconds: UInt64) -> String? {
        guard seconds < maximumSeconds else { return nil }
        // Written straight into the string's storage: decoders format one per date-time value.
        return String(unsafeUninitializedCapacity: 20) { u in
            writeDateTime(seconds, into: u)
            u[19] = UInt8(ascii: "Z")
            return 20
        }
    }

    static func format(milliseconds: UInt64) -> String? {
        guard milliseconds / 1000 < maximumSeconds else { return nil }
        return String(unsafeUninitializedCapacity: 24) { u in
            writeDateTime(milliseconds / 1000, into: u)
            u[19] = UInt8(ascii: ".")
            put(milliseconds % 1000, width: 3, at: 20, into: u)
            u[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    // MARK: -

    private static func digits(_ u: UnsafeBufferPointer<UInt8>, _ start: Int, _ count: Int) -> UInt64? {
        var v: UInt64 = 0
        for i in start..<start + count {
            let c = u[i]
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            v = v * 10 + UInt64(c - UInt8(ascii: "0"))
        }
        return v
    }

    /// `YYYY-MM-DDTHH:MM:SS` in the first 19 bytes, as seconds since 1970.
    private static func parseDateTime(_ u: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"), u[10] == UInt8(ascii: "T"),
            u[13] == UInt8(ascii: ":"), u[16] == UInt8(ascii: ":"),
            let year = digits(u, 0, 4), let month = digits(u, 5, 2), let day = digits(u, 8, 2),
            let hour = digits(u, 11, 2), let minute = digits(u, 14, 2), let second = digits(u, 17, 2),
            year >= 1970, (1...12).contains(month), day >= 1, day <= daysInMonth(year, month),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysFromCivil(Int64(year), Int64(month), Int64(day))
        return UInt64(days) * 86400 + hour * 3600 + minute * 60 + second
    }

    /// `YYYY-MM-DDTHH:MM:SS` into the first 19 bytes of `u`.
    private static func writeDateTime(_ seconds: UInt64, into u: UnsafeMutableBufferPointer<UInt8>) {
        let days = Int64(seconds / 86400)
        let rest = seconds % 86400
        let (y, m, d) = civilFromDays(days)
        put(UInt64(y), width: 4, at: 0, into: u)
        u[4] = UInt8(ascii: "-")
        put(UInt64(m), width: 2, at: 5, into: u)
        u[7] = UInt8(ascii: "-")
        put(UInt64(d), width: 2, at: 8, into: u)
        u[10] = UInt8(ascii: "T")
        put(rest / 3600, width: 2, at: 11, into: u)
        u[13] = UInt8(ascii: ":")
        put(rest / 60 % 60, width: 2, at: 14, into: u)
        u[16] = UInt8(ascii: ":")
        put(rest % 60, width: 2, at: 17, into: u)
    }

    /// `v` as `width` decimal digits, zero-padded (`v` has at most that many).
    private static func put(_ v: UInt64, width: Int, at start: Int, into u: UnsafeMutableBufferPointer<UInt8>) {
        var rest = v
        for i in (start..<start + width).reversed() {
            u[i] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
    }

    private static func isLeap(_ y: UInt64) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }

    private static func daysInMonth(_ y: UInt64, _ m: UInt64) -> UInt64 {
        switch m {
        case 2: return isLeap(y) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's algorithms for the proleptic Gregorian calendar.
    private static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    private static func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
