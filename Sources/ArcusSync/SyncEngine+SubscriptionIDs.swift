import ArcusStore

extension SyncEngine {
    /// A subscription as the agent's API names it: the engine's own number, stable across
    /// restarts (it is the key of the subscription's record in the store).
    public struct SubscriptionEntry: Sendable, Hashable {
        public let id: UInt64
        public let query: SubscriptionQuery
    }

    /// The active subscriptions, by number.
    public var subscriptionEntries: [SubscriptionEntry] {
        state.withLock { state in
            state.subscriptions.values.filter(\.active).sorted { $0.id < $1.id }.map { SubscriptionEntry(id: $0.id, query: $0.query) }
        }
    }

    /// Subscribes to `query` (see `registerSubscription(_:arguments:)`) and returns its number.
    public func registerSubscriptionEntry(_ query: SubscriptionQuery) throws -> SubscriptionEntry {
        let subscription = try registerSubscription(query)
        return SubscriptionEntry(id: subscription.id, query: subscription.query)
    }

    /// Cancels the active subscription numbered `id`; false when there is none.
    public func cancelSubscription(id: UInt64) -> Bool {
        guard subscription(id)?.active == true else { return false }
        cancelSubscription(id)
        return true
    }
}
