import ArcusMesh
import Synchronization

/// An in-process radio space: the loopback transports registered on it by name hear each other
/// as this network says, and their links carry messages as its `conditions` say. A network stands
/// for one kind of transport (two networks model a LAN and a Bluetooth radio side by side).
///
/// Who hears whom is a symmetric relation that tests change at runtime to model range: by default
/// every two members are in range; `setInRange` moves a pair in or out. Going out of range
/// announces `.peerLost` on both sides and drops the links between them: the dialling end closes
/// at once, the other after `detectionDelay`, as a radio's supervision timeout would notice.
///
/// All members may be called from any task.
public final class LoopbackNetwork: Sendable {
    public let kind: LinkKind
    public let conditions: LoopbackConditions
    /// How long the far end of a link takes to notice that its peer went out of range.
    public let detectionDelay: Duration
    private let state: Mutex<State>

    public init(
        kind: LinkKind = .loopback,
        conditions: LoopbackConditions = .instant,
        everyoneInRange: Bool = true,
        detectionDelay: Duration = .zero
    ) {
        conditions.validate()
        self.kind = kind
        self.conditions = conditions
        self.detectionDelay = detectionDelay
        self.state = Mutex(State(defaultInRange: everyoneInRange))
    }

    // MARK: Range

    /// Whether the members named `a` and `b` hear each other (whether or not they are running).
    public func isInRange(_ a: String, _ b: String) -> Bool {
        state.withLock { $0.inRange(a, b) }
    }

    /// Puts two members in or out of each other's range, announcing the change to both and, when
    /// they part, dropping the links between them.
    public func setInRange(_ a: String, _ b: String, _ inRange: Bool) {
        let parted: [Connection] = state.withLock { state in
            state.ranges[Pair(a, b)] = inRange
            state.announceChanges(kind: kind)
            guard !inRange else { return [] }
            return state.removeLinks { Pair($0.dialer, $0.acceptor) == Pair(a, b) }
        }
        for connection in parted { connection.dialerEnd.drop(peerNoticesAfter: detectionDelay) }
    }

    // MARK: Members

    /// Registers a running transport: it starts hearing, and being heard by, those in range.
    func join(_ endpoint: TransportEndpoint, events: AsyncStream<TransportEvent>.Continuation) {
        state.withLock { state in
            precondition(state.members[endpoint.address] == nil, "two running transports named \(endpoint.address) on one network")
            state.members[endpoint.address] = Member(endpoint: endpoint, events: events)
            state.everRegistered[endpoint.address] = endpoint
            state.announceChanges(kind: kind)
        }
    }

    /// Unregisters a transport: those in range lose it, its links close and its events finish.
    func leave(_ name: String) {
        let closing: [Connection] = state.withLock { state in
            guard let member = state.members.removeValue(forKey: name) else { return [] }
            member.events.finish()
            state.announceChanges(kind: kind)
            return state.removeLinks { $0.dialer == name || $0.acceptor == name }
        }
        for connection in closing { connection.dialerEnd.close() }
    }

    /// The endpoints `name` hears now.
    func reachable(from name: String) -> [TransportEndpoint] {
        state.withLock { state in
            guard let member = state.members[name] else { return [] }
            return member.heard.sorted().compactMap { state.members[$0]?.endpoint }
        }
    }

    /// Connects `dialer` to the member at `endpoint` and hands the far end to that member's events.
    func open(from dialer: String, to endpoint: TransportEndpoint) throws(TransportError) -> LoopbackLink {
        guard endpoint.kind == kind else { throw .wrongKind(endpoint, expected: kind) }
        let target = endpoint.address
        return try state.withLock { state throws(TransportError) in
            guard let me = state.members[dialer] else { throw .notRunning(transport: "\(kind.rawValue) loopback \(dialer)") }
            guard let acceptor = state.members[target] else {
                throw state.everRegistered[target] != nil ? .peerStopped(endpoint) : .unknownEndpoint(endpoint)
            }
            guard state.inRange(dialer, target) else { throw .unreachable(endpoint) }
            state.lastLinkNumber += 1
            let (near, far) = Loopback.pair(conditions, name: "\(dialer)→\(target) #\(state.lastLinkNumber)", kind: kind)
            state.links.removeAll { $0.dialerEnd.isClosed && $0.acceptorEnd.isClosed }
            state.links.append(Connection(dialer: dialer, acceptor: target, dialerEnd: near, acceptorEnd: far))
            // Under the lock, so that the acceptor cannot leave between the check and the event.
            acceptor.events.yield(.linkAccepted(far, from: me.endpoint))
            return near
        }
    }
}

// MARK: - State

/// Two member names, unordered: range is symmetric.
private struct Pair: Hashable {
    let low: String
    let high: String

    init(_ a: String, _ b: String) {
        (low, high) = a < b ? (a, b) : (b, a)
    }
}

private struct Member {
    let endpoint: TransportEndpoint
    let events: AsyncStream<TransportEvent>.Continuation
    /// The members this one has been told of by `.peerAppeared` and not lost since.
    var heard: Set<String> = []
}

private struct Connection {
    let dialer: String
    let acceptor: String
    let dialerEnd: LoopbackLink
    let acceptorEnd: LoopbackLink
}

private struct State {
    let defaultInRange: Bool
    var ranges: [Pair: Bool] = [:]
    var members: [String: Member] = [:]
    /// Every member that ever joined, at its last endpoint: a stopped one is not unknown.
    var everRegistered: [String: TransportEndpoint] = [:]
    var links: [Connection] = []
    var lastLinkNumber = 0

    init(defaultInRange: Bool) {
        self.defaultInRange = defaultInRange
    }

    func inRange(_ a: String, _ b: String) -> Bool {
        ranges[Pair(a, b)] ?? defaultInRange
    }

    /// Tells every running member of the peers it now hears and no longer hears, in name order.
    mutating func announceChanges(kind: LinkKind) {
        for name in members.keys.sorted() {
            let member = members[name]!
            let hears = Set(members.keys.filter { $0 != name && inRange(name, $0) })
            for lost in member.heard.subtracting(hears).sorted() {
                // A member that left is announced at its last endpoint.
                member.events.yield(.peerLost(everRegistered[lost] ?? TransportEndpoint(kind: kind, address: lost)))
            }
            for appeared in hears.subtracting(member.heard).sorted() {
                member.events.yield(.peerAppeared(members[appeared]!.endpoint))
            }
            members[name]!.heard = hears
        }
    }

    /// Forgets the links that match, returning them to be closed once the lock is released.
    mutating func removeLinks(where matches: (Connection) -> Bool) -> [Connection] {
        let removed = links.filter(matches)
        links.removeAll(where: matches)
        return removed
    }
}
