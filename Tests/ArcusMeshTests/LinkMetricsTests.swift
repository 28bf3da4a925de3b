import ArcusLoopback
import ArcusMesh
import Testing

@Suite("Link metrics")
struct LinkMetricsTests {
    @Test("a loopback link reports the conditions it emulates, and links around it report the same")
    func loopbackReportsItsConditions() {
        let (a, b) = Loopback.pair(.ble, kind: .bluetooth)
        defer { a.close() }
        let expected = LinkMetrics(roundTrip: .milliseconds(30), bytesPerSecond: 20_000, cost: .free)
        #expect(a.metrics == expected && b.metrics == expected)
        #expect(MessageChannel(a).metrics == expected)
    }

    @Test("a loopback link costs what its kind costs: only the cloud is metered")
    func defaultCostFollowsTheKind() {
        for kind in LinkKind.allCases {
            let (a, _) = Loopback.severablePair(.instant, kind: kind)
            defer { a.close() }
            #expect(a.metrics.cost == (kind == .cloud ? .metered : .free))
        }
        #expect(LinkCost.free < .metered)
    }
}
