/// The byte that starts every fragment a `MessageChannel` puts on a link.
///
/// ```
/// bit 0  first  the fragment begins a message
/// bit 1  more   more fragments of the message follow
/// bits 2–7      zero
///
/// first          the whole message follows
/// first + more   the message's length (LEB128 varint), then its first bytes
/// more           the message's next bytes, at least one
/// (none)         its last bytes: all fragments now carry exactly the length announced
/// ```
///
/// A message of up to `mtu - 1` bytes costs one byte; a longer one one byte per fragment plus
/// its length once (4 bytes for a 16 MiB message), so the receiver can refuse an oversize message
/// before it buffers any of it. The flags repeat what the receiver could infer, so that a
/// sequence that lost its way is caught at once rather than glued into a wrong message.
struct FragmentHeader: OptionSet, Sendable {
    let rawValue: UInt8

    static let first = FragmentHeader(rawValue: 1 << 0)
    static let more = FragmentHeader(rawValue: 1 << 1)
    static let known: FragmentHeader = [.first, .more]

    /// Bytes the header takes in every fragment.
    static let size = 1
}
