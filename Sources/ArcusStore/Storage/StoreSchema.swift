import GRDB

/// The tables of a store.
///
/// - `document`: one row per document: its CRDT state (ArcusCodec encoding, version vector
///   included — or, for a document created by one write and unchanged since, that write's
///   time as an integer (a local write) or its site and time as text (another site's, v9); an
///   encoded state may carry the deltas of later changes appended, see `DocumentRows` and
///   `StoredLayout`), its materialised JSON with `_id` (NULL once
///   removed: the row stays so the removal syncs), and `seq`, the change-log position of its
///   latest change. Since v3 `seq`
///   is the rowid: the table itself is the change log ("what changed since X" is a range of
///   it), new documents append at its end, and a write updates two b-trees, not three.
/// - `field_index`: the field indexes made by `CREATE INDEX`; each is also a SQLite expression
///   index on the document JSON.
/// - `attachment` and `attachment_ref`: blobs kept under `attachments/`, and which documents
///   point at them, so unreferenced blobs can be collected.
/// - `meta`: the site id, and `version_seq`: the change-log position `site_version` is complete
///   up to.
/// - `sync_record`: what the sync engine keeps across restarts (v4; see `Store.syncRecord`).
/// - `field_conflict`: the conflict view (v6; see `FieldConflicts`): per document and field
///   path (a JSON array of names), the values that lost to a concurrent write, with the stamp
///   (time, site) they were written with.
/// - `site_version`: the store's version vector, the latest event seen from each site, local
///   or merged (v2), checkpointed (see `SiteVersions`). The clock restarts above every stored
///   event, so stamps never go back.
enum StoreSchema {
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE document (
                    collection TEXT NOT NULL,
                    id TEXT NOT NULL,
                    state BLOB NOT NULL,
                    json TEXT,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (collection, id)
                ) WITHOUT ROWID;
                CREATE INDEX document_seq ON document (seq);
                CREATE TABLE field_index (
                    name TEXT PRIMARY KEY,
                    collection TEXT NOT NULL,
                    paths TEXT NOT NULL
                );
                CREATE TABLE attachment (
                    hash BLOB PRIMARY KEY,
                    length INTEGER NOT NULL,
                    created REAL NOT NULL
                );
                CREATE TABLE attachment_ref (
                    collection TEXT NOT NULL,
                    id TEXT NOT NULL,
                    hash BLOB NOT NULL,
                    PRIMARY KEY (collection, id, hash)
                ) WITHOUT ROWID;
                CREATE INDEX attachment_ref_hash ON attachment_ref (hash);
                CREATE TABLE meta (
                    key TEXT PRIMARY KEY,
                    value BLOB NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                CREATE TABLE site_version (
                    site INTEGER PRIMARY KEY,
                    time INTEGER NOT NULL
                );
                INSERT INTO site_version (site, time)
                    SELECT m.value, c.value FROM meta m, meta c WHERE m.key = 'site' AND c.key = 'clock';
                DELETE FROM meta WHERE key = 'clock';
                """)
        }
        migrator.registerMigration("v3") { db in
            // seq becomes the rowid; the field indexes go with the old table and are rebuilt.
            let fieldIndexes = try FieldIndex.all(db)
            try db.execute(sql: """
                CREATE TABLE document_v3 (
                    seq INTEGER PRIMARY KEY,
                    collection TEXT NOT NULL,
                    id TEXT NOT NULL,
                    state BLOB NOT NULL,
                    json TEXT
                );
                INSERT INTO document_v3 (seq, collection, id, state, json)
                    SELECT seq, collection, id, state, json FROM document ORDER BY seq;
                DROP TABLE document;
                ALTER TABLE document_v3 RENAME TO document;
                CREATE UNIQUE INDEX document_key ON document (collection, id);
                """)
            for index in fieldIndexes { try index.create(db) }
        }
        migrator.registerMigration("v4") { db in
            try db.execute(sql: """
                CREATE TABLE sync_record (
                    key TEXT PRIMARY KEY,
                    value BLOB NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        // Sites the store wrote under before its site changed (`Options.site`): their events
        // are its own.
        migrator.registerMigration("v5") { db in
            try db.execute(sql: "CREATE TABLE former_site (site INTEGER PRIMARY KEY)")
        }
        // The conflict view (`FieldConflicts`): values that lost a last-writer-wins resolution to
        // a write that had not seen them.
        migrator.registerMigration("v6") { db in
            try db.execute(sql: """
                CREATE TABLE field_conflict (
                    collection TEXT NOT NULL,
                    id TEXT NOT NULL,
                    path TEXT NOT NULL,
                    time INTEGER NOT NULL,
                    site INTEGER NOT NULL,
                    value TEXT NOT NULL,
                    PRIMARY KEY (collection, id, path, time, site)
                ) WITHOUT ROWID;
                """)
        }
        // Field indexes lead with the collection (`FieldIndex.create`), so that a query on one
        // collection, every one of which says `collection = ?`, is answered from the index alone
        // where it needs nothing else (a COUNT); indexes made before are made again so.
        migrator.registerMigration("v7") { db in
            for index in try FieldIndex.all(db) {
                try db.execute(sql: "DROP INDEX IF EXISTS \"\(index.sqliteName)\"")
                try index.create(db)
            }
        }
        // Encoded states may carry appended deltas (`StoredLayout`). Nothing to change in the
        // tables; the migration marks the store, so that a build that knows it refuses to open
        // what an even newer one wrote (see `refuseNewer`). (Builds before this one read only
        // the whole part of such a row: do not run them on a store this one wrote.)
        migrator.registerMigration("v8-appended-deltas") { _ in }
        // A document another site created with one write, unchanged since, is stored as that
        // write's stamp in text (`DocumentRows.CreationText`) instead of its encoded state.
        // Nothing to change in the tables; the mark keeps builds that would take such a row for
        // a damaged one from opening the store (`refuseNewer`).
        migrator.registerMigration("v9-foreign-creations") { _ in }
        return migrator
    }()

    /// Throws when the store was migrated by a newer build, whose rows this one may misread:
    /// opening it would risk writing back documents without what this build does not see.
    static func refuseNewer(_ db: Database, path: String) throws {
        let unknown = try migrator.appliedIdentifiers(db).subtracting(migrator.migrations)
        guard !unknown.isEmpty else { return }
        throw StoreError.newerSchema(path: path, unknown: unknown.sorted())
    }
}
