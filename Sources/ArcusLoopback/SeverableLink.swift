import ArcusMesh
import Synchronization

/// A link that can go silent without closing, as a radio does when its peer walks out of range:
/// no error, no close, just nothing more in either direction. Sessions must notice it by missed
/// heartbeats; closing a loopback link would tell both ends at once, which a real radio never does.
///
/// Made in pairs by `Loopback.severablePair`; `sever()` on either end silences both.
public final class SeverableLink: Link {
    /// The link underneath, which carries everything until the pair is severed.
    public let link: LoopbackLink
    public let incoming: AsyncStream<[UInt8]>
    private let cut: Severance

    init(_ link: LoopbackLink, cut: Severance) {
        self.link = link
        self.cut = cut
        // What arrives once the pair is severed is lost in the air.
        self.incoming = .relaying(link.incoming) { message in cut.isSevered ? nil : message }
    }

    public var kind: LinkKind { link.kind }
    public var metrics: LinkMetrics { link.metrics }
    public var mtu: Int { link.mtu }
    public var description: String { link.description }

    /// Whether the pair has been severed.
    public var isSevered: Bool { cut.isSevered }

    /// Sends as the link does; once severed, the message is taken and lost in the air.
    public func send(_ message: [UInt8]) async throws {
        guard !cut.isSevered else {
            guard message.count <= mtu else { throw LinkError.messageTooLarge(size: message.count, mtu: mtu) }
            return
        }
        try await link.send(message)
    }

    /// Silences both directions of the pair from now on; neither end closes.
    public func sever() { cut.sever() }

    /// Closes this end. Once severed, the peer is not told, as no radio could tell it: it finds
    /// out by itself (or closes its own end).
    public func close() {
        if cut.isSevered {
            link.drop(peerNoticesAfter: .seconds(3600))
        } else {
            link.close()
        }
    }
}

/// The switch both ends of a severable pair share.
final class Severance: Sendable {
    private let severed = Atomic(false)

    var isSevered: Bool { severed.load(ordering: .acquiring) }

    func sever() { severed.store(true, ordering: .releasing) }
}

extension Loopback {
    /// Two connected links, as `pair` makes, that `sever()` can silence without closing.
    public static func severablePair(
        _ conditions: LoopbackConditions, name: String = "loopback", kind: LinkKind = .loopback
    ) -> (SeverableLink, SeverableLink) {
        let (a, b) = pair(conditions, name: name, kind: kind)
        let cut = Severance()
        return (SeverableLink(a, cut: cut), SeverableLink(b, cut: cut))
    }
}
