import ArcusCodec
import ArcusStore

/// The change-log positions one merge gave documents that now hold nothing the sending peer
/// lacks: each merged state's version is covered by the version the peer sent it with. A
/// session serving that peer can pass over such a stretch without reading it back
/// (`SyncSession.passEchoes`): the read would find nothing to send. In a catch-up that is every
/// batch, and the read back was a tenth of the receiver's time.
struct EchoedStretch {
    /// Nil when nothing changed, or when some change breaks the stretch.
    private(set) var positions: ClosedRange<Int64>?
    private var broken = false

    /// Adds the change that merging `sent` made (the transaction's latest).
    mutating func add(_ change: DocumentChange?, sent: DocumentDelta) {
        guard !broken else { return }
        guard let change, change.key == sent.key, !change.withheld, let state = change.state,
              state.version.isCovered(by: sent.state.version),
              positions.map({ change.sequence == $0.upperBound + 1 }) ?? true else {
            broken = true
            positions = nil
            return
        }
        positions = (positions?.lowerBound ?? change.sequence)...change.sequence
    }
}
