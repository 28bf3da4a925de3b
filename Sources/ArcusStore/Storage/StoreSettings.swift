import ArcusCRDT

/// Answers `SHOW` and `ALTER SYSTEM` for the program that runs a store: the store parses those
/// statements and knows no setting itself (an agent's log level or transports are not the
/// store's). `Store.registerSettings` installs one; without one the statements are refused.
///
/// `run` is called on the thread that called `Store.execute`, outside any transaction; it may
/// use the store. It returns the rows the statement answers with: for SHOW one row per setting,
/// for ALTER SYSTEM the settings it changed, as they now are. It throws, changing nothing, for an
/// unknown name or a value the setting does not take, with what it does take.
public protocol StoreSettings: Sendable {
    func run(_ statement: DQLSettingsStatement) throws -> [Value]
}

extension Store {
    /// Makes `settings` answer this store's SHOW and ALTER SYSTEM statements, in place of any
    /// registered before.
    public func registerSettings(_ settings: any StoreSettings) {
        self.settings.withLock { $0 = settings }
    }

    func runSettings(_ statement: DQLSettingsStatement) throws -> [Value] {
        guard let settings = settings.withLock({ $0 }) else {
            throw StoreError.invalidQuery(
                "SHOW and ALTER SYSTEM act on an agent's settings, and this store has none: run them with `arcus exec --agent URL` or `arcus exec --data DIR`"
            )
        }
        return try settings.run(statement)
    }

    /// Sets what later commits survive (`Options.synchronous`) on the connection that commits,
    /// from the next write on, and on the one that checkpoints the log (`WALCheckpointer`).
    public func setSynchronous(_ synchronous: Options.Synchronous) throws {
        try onOpenWriter { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)")
        }
        try checkpointer?.setSynchronous(synchronous)
    }
}
