/// How fast one link moves a session's data: bytes of data frames that the peer acknowledged per
/// second while the link had some of ours in flight, smoothed.
///
/// Idle time is not counted, so a link that carries little is not judged slow; a busy period
/// shorter than `sampleInterval` is not counted either, since over a few milliseconds the ack
/// delay, not the link, sets the figure. Acks count what the peer's consumer took, so a slow
/// consumer makes every link look slow alike, which leaves their order unchanged.
struct LinkThroughputMeter {
    /// The shortest busy time one sample spans.
    static let sampleInterval: Duration = .milliseconds(100)
    /// Samples before the figure counts, so that one burst does not move traffic.
    static let samplesBeforeTrusted = 2

    /// Bytes of data frames put on the link that the peer has not acknowledged yet.
    private(set) var bytesInFlight = 0
    /// Bytes per second, smoothed over samples; nil until the first.
    private(set) var bytesPerSecond: Double?
    private(set) var samples = 0

    private var sampleStart: ContinuousClock.Instant?
    private var sampleBytes = 0

    /// The smoothed figure once enough samples back it.
    var trustedBytesPerSecond: Double? { samples >= Self.samplesBeforeTrusted ? bytesPerSecond : nil }

    /// A data frame of `bytes` went on the link.
    mutating func sent(_ bytes: Int, at now: ContinuousClock.Instant) {
        if bytesInFlight == 0 {
            sampleStart = now
            sampleBytes = 0
        }
        bytesInFlight += bytes
    }

    /// A data frame sent on this link went again on another; its ack will not be this link's.
    mutating func withdrawn(_ bytes: Int) {
        bytesInFlight = max(0, bytesInFlight - bytes)
        if bytesInFlight == 0 { sampleStart = nil }
    }

    /// The peer acknowledged a data frame of `bytes` that went on this link. Returns whether
    /// that completed a sample, so the caller can weigh the links again.
    mutating func acknowledged(_ bytes: Int, at now: ContinuousClock.Instant) -> Bool {
        bytesInFlight = max(0, bytesInFlight - bytes)
        sampleBytes += bytes
        var completed = false
        if let start = sampleStart, now - start >= Self.sampleInterval {
            let sample = Double(sampleBytes) / ((now - start) / .seconds(1))
            // Smoothed, so that a sample that caught a stall or a burst does not decide alone.
            bytesPerSecond = bytesPerSecond.map { $0 * 0.75 + sample * 0.25 } ?? sample
            samples += 1
            completed = true
            sampleStart = now
            sampleBytes = 0
        }
        // Idle now: the next busy period starts a sample of its own.
        if bytesInFlight == 0 { sampleStart = nil }
        return completed
    }
}
