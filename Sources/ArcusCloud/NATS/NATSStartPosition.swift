/// Where an ordered consumer starts in its stream.
public enum NATSStartPosition: Sendable, Hashable {
    /// Messages published after the subscription is made.
    case new
    /// Every message the stream still holds, oldest first.
    case all
    /// From this stream sequence on (or the oldest held, if that one is gone).
    case sequence(UInt64)
}
