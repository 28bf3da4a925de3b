import GRDB

extension Database {
    /// Runs `body` in an IMMEDIATE transaction and commits it, or rolls it back if `body` (or
    /// the commit) throws — GRDB's `inTransaction`, with BEGIN and COMMIT as cached statements.
    /// `inTransaction` parses both anew for every transaction, and a store commits one per local
    /// write and per merged batch: that parsing was 6.5% of a sync replay's time (perf on
    /// `arcus bench trace`, mesh seed 7).
    func inImmediateTransaction<T>(_ body: () throws -> T) throws -> T {
        try cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            let result = try body()
            // SQLite rolls a transaction back itself on some errors (SQLITE_FULL, SQLITE_IOERR):
            // then there is nothing to commit, and what `body` did is gone.
            guard isInsideTransaction else {
                throw DatabaseError(resultCode: .SQLITE_ABORT, message: "SQLite rolled the transaction back after an error")
            }
            try cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            if isInsideTransaction { try? rollback() }
            throw error
        }
    }
}
