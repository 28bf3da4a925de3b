import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Testing

/// The emulated radio's pacing. Only lower bounds on time are checked: the emulation may never
/// be faster than the radio it models; how much slower a busy machine makes it is not a test.
@Suite("Emulated BLE PHY", .timeLimit(.minutes(2)))
struct EmulatedPHYTests {
    @Test("a default-MTU SDU is one LL packet: 251 + 14 bytes at 1 Mbit/s plus the 150 µs gap")
    func airtime() {
        let phy = EmulatedPHY()
        #expect(phy.airtimeNanoseconds(sduBytes: 247) == 2_120_000 + 150_000)
        // One byte more needs a second LL packet, with its own overhead and gap.
        #expect(phy.airtimeNanoseconds(sduBytes: 248) == UInt64(Double((252 + 28) * 8) / 1e6 * 1e9) + 300_000)
        #expect(phy.latencyNanoseconds == 7_500_000)
        let goodput = phy.goodputBytesPerSecond(mtu: 247)
        #expect(goodput > 0.85 * 125_000 && goodput < 125_000)
    }

    @Test("a paced link takes at least the airtime of what it carries, and reports its rate")
    func pacingHoldsBack() async throws {
        let phy = EmulatedPHY()
        let (a, b) = try EmulatedLinkPair.make(phy: phy)
        defer { a.close() }
        #expect(a.metrics.bytesPerSecond == phy.goodputBytesPerSecond(mtu: a.mtu))
        #expect(a.metrics.roundTrip == .milliseconds(15))
        let messages = (0..<40).map { testMessage($0, size: a.mtu) }
        let clock = ContinuousClock()
        let start = clock.now
        let sending = Task { for message in messages { try await a.send(message) } }
        #expect(try await b.incoming.next(messages.count, within: .seconds(60)) == messages)
        try await sending.value
        let floor = Duration.nanoseconds(Int64(phy.airtimeNanoseconds(sduBytes: a.mtu)) * Int64(messages.count - 1))
            + phy.connectionInterval
        #expect(clock.now - start >= floor, "40 SDUs crossed faster than a 1 Mbit/s PHY can carry them")
    }
}
