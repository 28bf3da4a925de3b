import ArcusCRDT
import GRDB
import GRDBSQLite

/// A cached GRDB statement bound and stepped through SQLite's C API. Only for the statements
/// every document write runs: for rows this small, building GRDB's argument arrays costs more
/// than SQLite's own work. The statement must be used only through this type.
struct RawStatement {
    private let statement: Statement
    private let db: Database

    init(_ db: Database, sql: String) throws {
        self.db = db
        statement = try db.cachedStatement(sql: sql)
    }

    private var handle: SQLiteStatement { statement.sqliteStatement }

    /// SQLite copies what it is given (the bytes live only as long as the call).
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    func bind(_ text: String, at index: Int32) throws {
        // A null pointer would bind NULL: the empty string gets a pointer to a terminator.
        guard !text.isEmpty else { return try check(sqlite3_bind_text(handle, index, "", 0, Self.transient)) }
        var text = text
        let code = text.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(handle, index, $0.baseAddress, Int32($0.count), Self.transient) }
        }
        try check(code)
    }

    func bind(_ text: String?, at index: Int32) throws {
        guard let text else { return try check(sqlite3_bind_null(handle, index)) }
        try bind(text, at: index)
    }

    func bind(_ blob: UnsafeRawBufferPointer, at index: Int32) throws {
        // A zero-length blob, not NULL, when there are no bytes.
        try check(sqlite3_bind_blob(handle, index, blob.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(blob.count), Self.transient))
    }

    func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    /// Runs the statement to completion.
    func execute() throws {
        defer { sqlite3_reset(handle) }
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else { throw error(code) }
    }

    /// Runs a query for at most one row and hands `row` its columns, which are valid only
    /// during the call; nil when there is no row.
    func firstRow<T>(_ row: (Columns) throws -> T) throws -> T? {
        defer { sqlite3_reset(handle) }
        let code = sqlite3_step(handle)
        if code == SQLITE_DONE { return nil }
        guard code == SQLITE_ROW else { throw error(code) }
        return try row(Columns(handle: handle))
    }

    /// The current row's columns.
    struct Columns {
        fileprivate let handle: SQLiteStatement

        /// A `document.state` column: an encoded state (blob), a local creation time (integer),
        /// or another site's creation stamp (text, `DocumentRows.CreationText`).
        func storedState(_ index: Int32) -> DocumentRows.StoredState {
            switch sqlite3_column_type(handle, index) {
            case SQLITE_INTEGER:
                return .created(Timestamp(rawValue: UInt64(bitPattern: sqlite3_column_int64(handle, index))))
            case SQLITE_TEXT:
                let text = UnsafeBufferPointer(start: sqlite3_column_text(handle, index), count: Int(sqlite3_column_bytes(handle, index)))
                return DocumentRows.CreationText.stored(text)
            default:
                break
            }
            let bytes = sqlite3_column_blob(handle, index)
            return .encoded(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, index))))
        }

        /// An integer column (0 when NULL).
        func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

        /// A text column; nil when NULL.
        func text(_ index: Int32) -> String? {
            guard let text = sqlite3_column_text(handle, index) else { return nil }
            let count = Int(sqlite3_column_bytes(handle, index))
            return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        }
    }

    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw error(code) }
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = db.sqliteConnection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }
}
