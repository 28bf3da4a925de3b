import ArcusLoopback
@testable import ArcusMesh
import ArcusTransportConformance

extension PeerID {
    /// Fixed ids, so that tests know which is smaller: alpha < bravo < mallory.
    static let alpha = PeerID(helloBytes: [UInt8](repeating: 0x0A, count: PeerID.size))!
    static let bravo = PeerID(helloBytes: [UInt8](repeating: 0x0B, count: PeerID.size))!
    static let mallory = PeerID(helloBytes: [UInt8](repeating: 0x0C, count: PeerID.size))!
}

/// Two peers, `alpha` < `bravo` by id, each with its own multiplexer, and the loopback links a
/// test makes between them.
struct SessionTestPeers {
    let alpha: Multiplexer
    let bravo: Multiplexer

    init(configuration: SessionConfiguration = SessionTestPeers.quickConfiguration) {
        alpha = Multiplexer(localPeer: .alpha, configuration: configuration)
        bravo = Multiplexer(localPeer: .bravo, configuration: configuration)
    }

    /// For tests that are not about failover timing: heartbeats every second (dead after three
    /// silent seconds), so that a starved test process does not lose links it did not mean to,
    /// and a shorter hello timeout so that refused links do not hold tests up.
    static var quickConfiguration: SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.heartbeatInterval = .seconds(1)
        configuration.helloTimeout = .seconds(10)
        return configuration
    }

    var alphaSession: PeerSession { get async { await alpha.session(with: .bravo) } }
    var bravoSession: PeerSession { get async { await bravo.session(with: .alpha) } }

    /// A link of `kind` that `dialer` opened and the other accepted, bound on both sides. Returns
    /// alpha's end and bravo's end.
    @discardableResult
    func link(_ conditions: LoopbackConditions = .instant, kind: LinkKind, dialer: PeerID = .alpha, name: String? = nil) async throws -> (alpha: LoopbackLink, bravo: LoopbackLink) {
        let (a, b) = Loopback.pair(conditions, name: name ?? "\(kind)", kind: kind)
        let alphaRole: LinkRole = dialer == .alpha ? .dialer : .acceptor
        let bravoRole: LinkRole = dialer == .alpha ? .acceptor : .dialer
        async let alphaSide = alpha.add(a, as: alphaRole)
        async let bravoSide = bravo.add(b, as: bravoRole)
        _ = try await (alphaSide, bravoSide)
        return (a, b)
    }

    /// Like `link`, on a pair that `sever()` silences without closing, as a radio out of range.
    @discardableResult
    func severableLink(_ conditions: LoopbackConditions, kind: LinkKind) async throws -> (alpha: SeverableLink, bravo: SeverableLink) {
        let (a, b) = Loopback.severablePair(conditions, name: "\(kind), severable", kind: kind)
        async let alphaSide = alpha.add(a, as: .dialer)
        async let bravoSide = bravo.add(b, as: .acceptor)
        _ = try await (alphaSide, bravoSide)
        return (a, b)
    }

    func close() async {
        await alpha.close()
        await bravo.close()
    }
}

/// Waits until `condition` holds, polling; throws `StepTimedOut` after `limit`.
func eventually(_ what: String, within limit: Duration = .seconds(45), _ condition: @escaping @Sendable () async -> Bool) async throws {
    try await within(limit, what) {
        while !(await condition()) { try await Task.sleep(for: .milliseconds(10)) }
    }
}

/// A numbered message: its index in 8 bytes, then `padding` bytes that follow from the index.
func numberedMessage(_ index: Int, padding: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(index).bigEndian, Array.init) + testMessage(index, size: padding)
}

/// The index of a `numberedMessage`, after checking that its padding arrived unchanged.
func index(ofNumbered message: [UInt8]) -> Int? {
    guard message.count >= 8 else { return nil }
    let index = message.prefix(8).reduce(0) { $0 << 8 | Int($1) }
    return Array(message.dropFirst(8)) == testMessage(index, size: message.count - 8) ? index : nil
}
