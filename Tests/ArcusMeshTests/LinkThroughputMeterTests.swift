@testable import ArcusMesh
import Testing

/// The meter's arithmetic, on instants the test chooses: no clock runs here.
@Suite struct LinkThroughputMeterTests {
    let start = ContinuousClock.now

    func at(milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test("acknowledged bytes over busy time, trusted from the second sample")
    func measuresBusyTime() {
        var meter = LinkThroughputMeter()
        meter.sent(10_000, at: at(milliseconds: 0))
        meter.sent(10_000, at: at(milliseconds: 0))
        #expect(meter.bytesInFlight == 20_000)
        let firstSample = meter.acknowledged(10_000, at: at(milliseconds: 100))
        #expect(firstSample)
        #expect(meter.bytesPerSecond == 100_000)
        #expect(meter.trustedBytesPerSecond == nil, "one sample is not enough")
        // Half the rate: the smoothed figure moves a quarter of the way.
        let secondSample = meter.acknowledged(10_000, at: at(milliseconds: 300))
        #expect(secondSample)
        #expect(meter.bytesPerSecond == 87_500)
        #expect(meter.trustedBytesPerSecond == 87_500)
        #expect(meter.bytesInFlight == 0)
    }

    @Test("idle time between busy periods does not count, and neither does a short burst")
    func ignoresIdleTimeAndShortBursts() {
        var meter = LinkThroughputMeter()
        meter.sent(10_000, at: at(milliseconds: 0))
        let beforeIdle = meter.acknowledged(10_000, at: at(milliseconds: 100))
        #expect(beforeIdle)
        // Ten seconds idle, then the same rate again.
        meter.sent(10_000, at: at(milliseconds: 10_100))
        let afterIdle = meter.acknowledged(10_000, at: at(milliseconds: 10_200))
        #expect(afterIdle)
        #expect(meter.trustedBytesPerSecond == 100_000)
        // A burst acknowledged within the ack delay says more about the delay than the link.
        meter.sent(100, at: at(milliseconds: 20_000))
        let burstSampled = meter.acknowledged(100, at: at(milliseconds: 20_005))
        #expect(!burstSampled)
        #expect(meter.samples == 2)
    }

    @Test("bytes sent again on another link leave this one's flight")
    func withdrawn() {
        var meter = LinkThroughputMeter()
        meter.sent(5_000, at: at(milliseconds: 0))
        meter.withdrawn(5_000)
        #expect(meter.bytesInFlight == 0)
        // Its next busy period starts afresh.
        meter.sent(5_000, at: at(milliseconds: 1_000))
        let freshSample = meter.acknowledged(5_000, at: at(milliseconds: 1_100))
        #expect(freshSample)
        #expect(meter.bytesPerSecond == 50_000)
    }
}
