/// Strings from untrusted UTF-8 without the generic `String(validating:as:)`, which looks up
/// type metadata on every call: ASCII (field names, ids, most values) is checked by a scan,
/// anything else by decoding and comparing.
enum UTF8Text {
    /// The string `bytes` spell, or nil when they are not valid UTF-8.
    @inline(__always)
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var ascii = true
        for byte in bytes where byte >= 0x80 {
            ascii = false
            break
        }
        let string = String(decoding: bytes, as: UTF8.self)
        if ascii { return string }
        // Decoding repairs invalid input with U+FFFD, so valid input is exactly what comes back.
        return string.utf8.elementsEqual(bytes) ? string : nil
    }
}
