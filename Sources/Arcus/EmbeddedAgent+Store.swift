import ArcusAgent
import ArcusStore

extension EmbeddedAgent {
    /// Runs one DQL statement, as `POST /v1/execute` does: queries, writes, and `SHOW` /
    /// `ALTER SYSTEM` for the agent's settings. A write is committed (durably, as `durability`
    /// says) when this returns. Errors are `DQLError` (the statement does not parse) or
    /// `StoreError` (it fails), and leave the store as it was.
    @discardableResult
    public func execute(_ statement: String, arguments: [String: Value] = [:]) async throws -> QueryResult {
        try await agent.execute(statement, arguments: arguments)
    }

    /// Runs a write, then waits until every peer named (peer id, site, or the name it announces)
    /// holds what it wrote, or `timeout` passes. The write is committed here either way; the
    /// answer says which peers do not hold it yet and why.
    public func execute(
        _ statement: String, arguments: [String: Value] = [:], waitingUntilHeldBy peers: [String], timeout: Duration = .seconds(30)
    ) async throws -> SyncedResult {
        let wait = try syncedWait(peers, timeout: timeout)
        let result = try await agent.execute(statement, arguments: arguments)
        let unsynced = try await unsynced(result.writtenDocuments, wait)
        return SyncedResult(
            result: result, synced: wait.targets.map(\.named).filter { name in !unsynced.contains { $0.peer == name } }, unsynced: unsynced
        )
    }

    /// Waits until every peer named (peer id, site, or the name it announces) holds `documents`
    /// as they are here, or `timeout` passes; returns the peers that do not, and why. For an
    /// app about to stop: what it wrote reaches the peers it is talking to before it goes.
    public func waitUntil(_ peers: [String], hold documents: [DocumentKey], timeout: Duration = .seconds(30)) async throws -> [SyncedResult.Unsynced] {
        try await unsynced(documents, syncedWait(peers, timeout: timeout))
    }

    private func syncedWait(_ peers: [String], timeout: Duration) throws(EmbeddedAgentError) -> SyncedWait {
        do throws(CommandError) {
            return try SyncedWait(peers: peers, timeout: timeout, graph: agent.presence.graph)
        } catch {
            throw EmbeddedAgentError(error)
        }
    }

    private func unsynced(_ documents: [DocumentKey], _ wait: SyncedWait) async throws -> [SyncedResult.Unsynced] {
        try await wait.unheld(documents, engine: agent.engine).map { SyncedResult.Unsynced(peer: $0.0.named, reason: SyncedWait.reason($0.1)) }
    }

    /// A live query: the current result at once, then one after every commit that changes it
    /// (local writes and synced ones alike), each with its difference from the last. Stop
    /// iterating to cancel the observer; the stream ends when the agent stops.
    public func observe(_ query: String, arguments: [String: Value] = [:]) throws -> AsyncStream<ObserverEvent> {
        do {
            return try agent.observe(query, arguments: arguments)
        } catch let error as AgentStopping {
            throw EmbeddedAgentError(error.description)
        }
    }
}

/// A write's result and which of the peers waited for hold it.
public struct SyncedResult: Sendable {
    public struct Unsynced: Sendable, Hashable {
        /// The peer as the caller named it.
        public let peer: String
        /// What it lacks, for a person: the commit it has acknowledged, or that it is unknown.
        public let reason: String
    }

    public let result: QueryResult
    /// The peers that hold the write, as named.
    public let synced: [String]
    /// The peers that did not hold it within the timeout.
    public let unsynced: [Unsynced]

    /// Whether every peer named holds the write.
    public var isSynced: Bool { unsynced.isEmpty }
}
