/// Why a `MessageChannel` refused the fragments its peer sent. The channel closes the link at
/// the first one: a peer that breaks the fragment format cannot be resynchronised.
public enum FragmentationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A link message with no header byte.
    case emptyFragment
    /// A header byte with flags this version does not know.
    case unknownFlags(header: UInt8)
    /// The length at the start of a message is cut short or does not fit in an `Int`.
    case malformedLength
    /// A message longer than the channel's `maximumMessageSize`, refused before it was buffered.
    case messageTooLarge(announced: Int, limit: Int)
    /// A fragment continuing a message arrived when no message had begun.
    case continuationWithoutStart
    /// A new message began before the `received` of `expected` bytes of the last one arrived.
    case interruptedMessage(expected: Int, received: Int)
    /// A fragment announced that more follow but carried no bytes.
    case emptyContinuation
    /// The fragments of a message add up to more or fewer bytes than it announced.
    case lengthMismatch(expected: Int, received: Int)

    public var description: String {
        switch self {
        case .emptyFragment:
            return "a fragment has no header byte"
        case .unknownFlags(let header):
            return "a fragment header has unknown flags (0x\(String(header, radix: 16)))"
        case .malformedLength:
            return "the length at the start of a message is malformed"
        case .messageTooLarge(let announced, let limit):
            return "the peer announced a message of \(announced) bytes; the limit is \(limit)"
        case .continuationWithoutStart:
            return "a fragment continues a message that never began"
        case .interruptedMessage(let expected, let received):
            return "a message began after only \(received) of the previous message's \(expected) bytes"
        case .emptyContinuation:
            return "a fragment that announces more fragments carries no bytes"
        case .lengthMismatch(let expected, let received):
            return "a message announced \(expected) bytes but its fragments carry \(received)"
        }
    }
}
