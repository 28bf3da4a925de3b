import ArcusCRDT
import ArcusStore
@testable import ArcusSync
import ArcusTestSupport
import Testing

/// What a store's subscriptions claim survives in its sync records, apart from the documents
/// its clock repair fixes at open. A claim a poisoned clock (or a lying peer, before claims were
/// bounded) left past this device's bound would keep every peer from sending that writer's
/// real writes, for good: the engine lowers it when it starts.
@Suite("Poisoned subscription knowledge")
struct PoisonedKnowledgeTests {
    @Test("a subscription recorded as holding a writer's events up to the end of time claims only what the store holds, and gets that writer's writes")
    func claimPastTheBoundIsLowered() async throws {
        let writer = try Peer("writer")
        try writer.store.insertOrders(0..<3)
        _ = try writer.subscribe("SELECT * FROM orders")

        // The victim's record, as an earlier version left it after a peer claimed
        // `{writer: the end of time}` for it.
        let victimStore = try Store(inMemory: Store.Options())
        let poisoned = LocalSubscription(
            id: 1, query: try SubscriptionQuery("SELECT * FROM orders"), active: true,
            knowledge: VersionVector([writer.store.site: Timestamp(milliseconds: Timestamp.maxMilliseconds, logical: 0)]))
        try victimStore.write { try $0.setSyncRecord(SyncRecords.subscriptionKey(1), poisoned.record) }

        let victim = try Peer("victim", store: victimStore)
        // Lowered at start, and recorded so: a restart does not bring the claim back.
        let recorded = try #require(victimStore.syncRecord(SyncRecords.subscriptionKey(1)).flatMap { LocalSubscription(id: 1, record: $0) })
        #expect(recorded.knowledge[writer.store.site] == nil)
        #expect(victim.log.contains(.warning, "claimed writes this store does not hold"))

        let link = connect(victim, writer)
        #expect(await link.caughtUp())
        #expect(try await eventually { try ids(victim.store, "orders") == ["o0000", "o0001", "o0002"] })
        for peer in [victim, writer] { peer.engine.stop() }
    }

    @Test("claims within the bound, and the store's own site, are left as they are")
    func honestClaimsStay() throws {
        let store = try Store(inMemory: Store.Options())
        let other = SiteID(rawValue: 0x0102_0304_0506_0708)
        let time = Timestamp(milliseconds: 1_790_000_000_000, logical: 0)
        var subscription = LocalSubscription(
            id: 1, query: try SubscriptionQuery("SELECT * FROM orders"), active: true,
            knowledge: VersionVector([other: time, store.site: Timestamp(milliseconds: Timestamp.maxMilliseconds, logical: 0)]))
        let before = subscription.knowledge
        let loweredHonest = subscription.lowerClaims(beyond: store.latestAdmissibleTime, of: [], held: VersionVector([other: time]), site: store.site)
        #expect(!loweredHonest)
        #expect(subscription.knowledge == before)
        // A site the repair lowered is held to what the store keeps of it.
        let kept = Timestamp(milliseconds: 1_789_000_000_000, logical: 0)
        let loweredRepaired = subscription.lowerClaims(beyond: store.latestAdmissibleTime, of: [other], held: VersionVector([other: kept]), site: store.site)
        #expect(loweredRepaired)
        #expect(subscription.knowledge[other] == kept)
    }
}
