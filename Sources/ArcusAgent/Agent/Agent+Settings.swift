import ArcusCRDT
import ArcusLAN
import ArcusMesh
import ArcusStore
import Logging

extension Agent {
    /// Runs one DQL statement in this agent: what `POST /v1/execute` and `arcus exec --agent`
    /// do. SHOW and ALTER SYSTEM act on the running agent's settings (`ALTER SYSTEM` takes
    /// effect at once where the setting is live, and is saved in the data directory); anything
    /// else runs on the store, as `store.execute` does. A change that cannot be made (a
    /// transport that cannot start, a value a setting does not take) throws and changes nothing.
    public func execute(_ statement: String, arguments: [String: Value] = [:]) async throws -> QueryResult {
        guard case .settings(let settingsStatement)? = try? DQLParser.parse(statement) else {
            return try store.execute(statement, arguments: arguments)
        }
        switch try settings.request(settingsStatement) {
        case .show(let shown):
            return QueryResult(items: settings.rows(shown))
        case .change(let changes):
            // One change at a time: each starts from the transports the last one left.
            return try await settingChanges.withLock {
                QueryResult(items: try await settings.change(changes) { setting, value in try await self.apply(setting, value) })
            }
        }
    }

    /// Puts `value` (checked) in force for a live setting.
    private func apply(_ setting: RuntimeSetting, _ value: Value) async throws {
        var wanted = configuration
        try setting.apply(value, to: &wanted)
        switch setting {
        case .logLevel:
            logLevel.level = wanted.logLevel
        case .durability:
            try store.setSynchronous(wanted.durability.synchronous)
        case .transports:
            try await runTransports(wanted.transports)
        case .tombstoneLifetime:
            tombstoneLifetime.withLock { $0 = wanted.tombstoneLifetimeSeconds }
            reapSoon()
        case .pendingHandshakes, .bleLinks, .lazyPushHold:
            break  // at the next start
        }
        logger.notice("setting changed by ALTER SYSTEM", metadata: ["setting": "\(setting.rawValue)", "value": "\(value.jsonString)"])
    }

    /// Makes `wanted` the transports that run: starts those that do not run (each anew: a
    /// stopped transport cannot start again), then stops those not wanted, closing their links.
    /// If one cannot start, those just started are stopped and the running ones left as they
    /// were, and the error says why.
    private func runTransports(_ wanted: [TransportChoice]) async throws {
        guard buildsTransports else {
            throw StoreError.invalidQuery("this agent runs the transports the program that embeds it gave it; it cannot start or stop them")
        }
        guard let outcomes = transportStarts.outcomes else {
            throw StoreError.invalidQuery("the transports are still starting; try again in a moment")
        }
        let failed = Set(outcomes.filter { $0.failure != nil }.map(\.name))
        let current = transports
        func choice(_ transport: any Transport) -> TransportChoice? {
            TransportChoice.allCases.first { $0.kind == transport.kind }
        }
        let kept = current.filter { transport in
            guard let choice = choice(transport) else { return false }
            return wanted.contains(choice) && !failed.contains(choice.rawValue)
        }
        var started: [any Transport] = []
        for choice in wanted where !kept.contains(where: { $0.kind == choice.kind }) {
            do {
                let transport = try makeTransport(choice)
                do {
                    try await transport.start()
                } catch {
                    await transport.stop()
                    throw CommandError("\(error)")
                }
                logger.info("transport started", metadata: ["transport": "\(transport.kind.rawValue)", "endpoint": "\(transport.localEndpoint)"])
                started.append(transport)
            } catch {
                for transport in started { await transport.stop() }
                let reason = (error as? CommandError)?.message ?? "\(error)"
                throw StoreError.invalidQuery("the \(choice.rawValue) transport cannot start: \(reason); the transports are unchanged")
            }
        }
        for transport in current where !kept.contains(where: { $0 === transport }) {
            if transport.kind == .lan, let address = try? LANAddress(parsing: transport.localEndpoint.address, listening: true), address.port != 0 {
                stoppedLANAddress.withLock { $0 = address }
            }
            await transport.stop()
            logger.info("transport stopped by ALTER SYSTEM", metadata: ["transport": "\(transport.kind.rawValue)"])
        }
        let running = wanted.compactMap { choice in (kept + started).first { $0.kind == choice.kind } }
        liveTransports.withLock { $0 = running }
        transportStarts.record(wanted.map { TransportStarts.Outcome(name: $0.rawValue, failure: nil) })
        for transport in started { Task { await self.runTransport(transport) } }
    }

    /// A new transport of `choice`, made as at start; LAN listens where it last did when the
    /// configuration lets the system pick the port.
    private func makeTransport(_ choice: TransportChoice) throws(CommandError) -> any Transport {
        var made = configuration
        if choice == .lan, (made.listen?.port ?? 0) == 0, let address = stoppedLANAddress.withLock({ $0 }) { made.listen = address }
        return try Self.transport(
            choice, made, identity: identity, credential: connector?.handshake.credential, pendingHandshakes: pendingHandshakes, logger: logger
        )
    }
}

extension TransportChoice {
    /// The kind of link the transport makes.
    var kind: LinkKind {
        switch self {
        case .lan: return .lan
        case .ble: return .bluetooth
        case .cloud: return .cloud
        case .loopback: return .loopback
        }
    }
}
