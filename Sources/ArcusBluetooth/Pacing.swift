/// The emulated radio's sending side, kept by the link's thread: SDUs leave at the PHY's rate
/// (each occupies the radio for its airtime) and reach the peer's socket a connection interval
/// later. What is paced but not yet due is bounded by `EmulatedPHY.bytesInFlight`, so a slow
/// consumer still holds the producer back.
struct Pacing {
    enum Admission {
        /// The SDU has had its airtime: it is due at the peer at `due`.
        case now(due: UInt64)
        /// The radio is busy until then.
        case later(UInt64)
        /// Too much is in flight already.
        case full
    }

    private let phy: EmulatedPHY?
    private let limit: Int
    private var inFlight: [(due: UInt64, message: [UInt8])] = []
    private var inFlightBytes = 0
    /// When the radio is free: the end of the last admitted SDU's airtime.
    private var busyUntil: UInt64 = 0
    /// The SDU at the head of the queue and the end of its airtime, once it has been scheduled.
    private var scheduled: (id: UInt64, end: UInt64)?

    /// A thread woken late (poll sleeps in whole milliseconds) may catch up on this much of the
    /// radio's idle time, so that waking late does not lower the rate.
    private static let catchUpNanoseconds: UInt64 = 2_000_000

    init(phy: EmulatedPHY?, mtu: Int) {
        self.phy = phy
        limit = phy?.bytesInFlight(mtu: mtu) ?? 0
    }

    var nextDue: UInt64? { inFlight.first?.due }

    mutating func admit(id: UInt64, size: Int, at now: UInt64) -> Admission {
        guard let phy else { return .now(due: now) }
        if scheduled?.id != id {
            guard inFlightBytes == 0 || inFlightBytes + size <= limit else { return .full }
            // A radio busy until just now goes on from where it was (a thread woken late must not
            // lower the rate); an idle one starts now (backdating it would beat the latency).
            let start = busyUntil + Self.catchUpNanoseconds >= now ? busyUntil : now
            busyUntil = start + phy.airtimeNanoseconds(sduBytes: size)
            scheduled = (id, busyUntil)
        }
        guard let end = scheduled?.end, end <= now else { return .later(scheduled!.end) }
        scheduled = nil
        return .now(due: end + phy.latencyNanoseconds)
    }

    mutating func enqueue(_ message: [UInt8], due: UInt64) {
        inFlight.append((due, message))
        inFlightBytes += message.count
    }

    /// Sends what is due, in order; false if the socket filled up before all of it went.
    mutating func deliverDue(at now: UInt64, to socket: SeqPacketSocket) throws -> Bool {
        while let first = inFlight.first, first.due <= now {
            guard try socket.sendWithoutBlocking(first.message) else { return false }
            inFlight.removeFirst()
            inFlightBytes -= first.message.count
        }
        return true
    }
}
