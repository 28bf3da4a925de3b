/// How an emulated link behaves: its MTU, rate, latency, loss and buffering, the same in both
/// directions.
///
/// A message is delivered after it has been serialised at `bytesPerSecond` behind the messages
/// sent before it, plus `latency`; messages of one direction share that rate, so a burst is
/// pipelined rather than sent one round trip at a time.
public struct LoopbackConditions: Sendable, Hashable, CustomStringConvertible {
    /// The largest message a link accepts, in bytes.
    public var mtu: Int
    /// The rate at which a direction moves message bytes (goodput, not the radio's raw rate);
    /// nil for no limit.
    public var bytesPerSecond: Double?
    /// The one-way delay added to every message once it is serialised.
    public var latency: Duration
    /// The probability that a message is silently dropped, drawn per message.
    ///
    /// A lossy link is a datagram model, for testing transports and recovery: a `Link` that the
    /// sync protocol runs on must be reliable, and the real transports are (L2CAP in ERTM or
    /// credit-based mode, TCP). Leave it at zero for anything that expects a `Link`'s contract.
    public var lossRate: Double
    /// How many bytes a direction holds, sent but not yet taken by the receiving consumer, before
    /// `send` suspends. A message larger than this is still accepted when nothing is in flight.
    public var queueLimitBytes: Int

    public init(
        mtu: Int,
        bytesPerSecond: Double? = nil,
        latency: Duration = .zero,
        lossRate: Double = 0,
        queueLimitBytes: Int = 64 << 10
    ) {
        self.mtu = mtu
        self.bytesPerSecond = bytesPerSecond
        self.latency = latency
        self.lossRate = lossRate
        self.queueLimitBytes = queueLimitBytes
    }

    /// No delay and a large MTU: for tests of logic above the link.
    public static let instant = LoopbackConditions(mtu: 64 << 10, queueLimitBytes: 1 << 20)

    /// A Bluetooth LE L2CAP connection-oriented channel between two Linux devices.
    ///
    /// - MTU 244: a maximum-length LE data packet with Data Length Extension (251 bytes) less the
    ///   4-byte L2CAP header and 3 bytes of framing above it, the figure BLE stacks quote: one
    ///   message is one radio packet.
    /// - 20 000 B/s: the low end of the 20–60 KB/s that BLE 4.2/5 channels sustain in practice
    ///   (1M PHY, connection intervals of 15–30 ms, a few packets per interval); radios in the
    ///   field rarely see the upper end.
    /// - 15 ms: half of a 30 ms connection interval, the average wait for the next event.
    /// - 8 KiB in flight: about 32 packets of L2CAP credits; little, so that the mesh's priorities
    ///   rather than a deep buffer decide what goes first, as they must at this rate.
    public static let ble = LoopbackConditions(
        mtu: 244,
        bytesPerSecond: 20_000,
        latency: .milliseconds(15),
        queueLimitBytes: 8 << 10
    )

    /// A LAN TCP connection: Wi-Fi 5 or a busy gigabit Ethernet segment.
    ///
    /// - MTU 65 472: a 64 KiB frame on the stream less room for the frame and session headers.
    /// - 50 MB/s: what Wi-Fi 5 delivers at close range, or gigabit Ethernet shared with other
    ///   traffic, on Raspberry Pi class devices.
    /// - 0.2 ms: half of a wired LAN's round trip.
    /// - 1 MiB in flight: TCP's autotuned buffers reach a few MiB; this keeps 16 full frames going.
    public static let lan = LoopbackConditions(
        mtu: 64 * 1024 - 64,
        bytesPerSecond: 50_000_000,
        latency: .microseconds(200),
        queueLimitBytes: 1 << 20
    )

    /// The same link with time running `factor` times faster: the rate multiplied, the latency
    /// divided, the MTU, loss and buffering unchanged. Lets tests and demos run radio scenarios
    /// quickly while keeping their shape.
    public func accelerated(by factor: Double) -> LoopbackConditions {
        precondition(factor > 0, "time runs forward")
        var faster = self
        faster.bytesPerSecond = bytesPerSecond.map { $0 * factor }
        faster.latency = latency * (1 / factor)
        return faster
    }

    /// How long a direction is busy putting `byteCount` bytes on the link, rounded up to the
    /// nanosecond so that a link is never faster than its rate.
    func serializationTime(of byteCount: Int) -> Duration {
        guard let bytesPerSecond else { return .zero }
        let nanoseconds = (Double(byteCount) * 1e9 / bytesPerSecond).rounded(.up)
        return .nanoseconds(Int64(Swift.min(nanoseconds, Double(Int64.max / 2))))
    }

    /// Stops at the first condition a link cannot run with.
    func validate() {
        precondition(mtu > 0, "a link carries at least one byte per message")
        precondition(bytesPerSecond.map { $0 > 0 && $0.isFinite } ?? true, "a rate is positive and finite")
        precondition(latency >= .zero, "latency is never negative")
        precondition((0...1).contains(lossRate), "a loss rate is a probability")
        precondition(queueLimitBytes > 0, "a link holds at least one byte in flight")
    }

    public var description: String {
        var parts = ["mtu \(mtu)"]
        if let bytesPerSecond { parts.append("\(Int(bytesPerSecond)) B/s") }
        if latency > .zero { parts.append("latency \(latency)") }
        if lossRate > 0 { parts.append("loss \(lossRate)") }
        parts.append("queue \(queueLimitBytes) B")
        return parts.joined(separator: ", ")
    }
}
