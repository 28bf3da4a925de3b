import ArcusAgent
import ArcusSync

extension EmbeddedAgent {
    /// Asks peers for the documents `query` selects (a DQL SELECT; `""` for the whole store),
    /// now and whenever they change. The store keeps the subscription: it outlives a restart.
    /// Subscribing to the same query again returns the same subscription.
    @discardableResult
    public func subscribe(_ query: String, arguments: [String: Value] = [:]) throws(EmbeddedAgentError) -> Subscription {
        do throws(CommandError) {
            return Subscription(try agent.subscribe(query, arguments: arguments), progress: [])
        } catch {
            throw EmbeddedAgentError(error)
        }
    }

    /// Ends the subscription `id`; false if no active subscription has it.
    @discardableResult
    public func cancelSubscription(id: UInt64) -> Bool {
        agent.engine.cancelSubscription(id: id)
    }

    /// Every active subscription, each with its sync progress per connected peer.
    public var subscriptions: [Subscription] {
        let progress = agent.engine.syncProgress
        return agent.engine.subscriptionEntries.map { entry in Subscription(entry, progress: progress.filter { $0.subscriptionID == entry.id }) }
    }

    /// The mesh as this device sees it: peers, the links between them, each link's figures.
    public var peers: PresenceGraph { agent.presence.graph }

    /// The agent at a glance, the same JSON document `GET /v1/status` and `arcus status` give:
    /// transports, store figures, sync traffic, subscriptions, attachment fetches, the graph.
    public func status() async -> Value {
        await StatusDocument(agent: agent, startedAt: agent.startedAt).json()
    }
}

/// A sync subscription and how far it has come with each connected peer.
public struct Subscription: Sendable {
    public let id: UInt64
    /// The SELECT, as given.
    public let query: String
    public let arguments: [String: Value]
    /// Per connected peer: documents and bytes received, what the peer says is still to come.
    public let progress: [SubscriptionSyncProgress]

    /// Whether some peer serves it and every peer serving it has sent all it has.
    public var isCaughtUp: Bool { !progress.isEmpty && progress.allSatisfy(\.caughtUp) }

    init(_ entry: SyncEngine.SubscriptionEntry, progress: [SubscriptionSyncProgress]) {
        id = entry.id
        query = entry.query.text
        arguments = entry.query.arguments
        self.progress = progress
    }
}
