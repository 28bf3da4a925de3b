/// Sequential ids: a stem, then a run of decimal digits of fixed width (`d00124` after `d00123`).
/// Works on the UTF-8 bytes in place: keys go by once per document in every batch.
enum DocumentIDStep {
    /// 10^n for n in 0...18: the widths a digit run may have.
    private static let powersOfTen: [UInt64] = (0...18).map { n in (0..<n).reduce(1) { acc, _ in acc * 10 } }

    /// The trailing digits of `bytes`: where they start and their value (nil: none, or too many).
    @inline(__always)
    static func digits(_ bytes: UnsafeBufferPointer<UInt8>) -> (start: Int, value: UInt64)? {
        var start = bytes.count
        while start > 0, bytes[start - 1] &- UInt8(ascii: "0") < 10 { start -= 1 }
        let width = bytes.count - start
        guard width > 0, width <= 18 else { return nil }
        var value: UInt64 = 0
        for i in start..<bytes.count { value = value &* 10 &+ UInt64(bytes[i] &- UInt8(ascii: "0")) }
        return (start, value)
    }

    /// How far `current` steps up from `previous`, if it is the same stem and digit count with a
    /// larger number.
    static func step(from previous: [UInt8], to current: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard previous.count == current.count else { return nil }
        return previous.withUnsafeBufferPointer { previous -> UInt64? in
            guard let a = digits(previous), let b = digits(current), a.start == b.start, b.value > a.value else { return nil }
            for i in 0..<a.start where previous[i] != current[i] { return nil }
            return b.value - a.value
        }
    }

    /// Steps the id `step` up in place, keeping its width; false (leaving it unchanged) when it
    /// has no digits or the number would outgrow them.
    static func advance(_ id: inout [UInt8], by step: UInt64) -> Bool {
        id.withUnsafeMutableBufferPointer { bytes -> Bool in
            guard let (start, value) = digits(UnsafeBufferPointer(bytes)) else { return false }
            let (next, overflow) = value.addingReportingOverflow(step)
            let width = bytes.count - start
            guard !overflow, next < powersOfTen[width] else { return false }
            var rest = next
            for i in (start..<bytes.count).reversed() {
                bytes[i] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return true
        }
    }
}
