import ArcusCRDT

/// INSERT, UPDATE, DELETE, EVICT and the index statements.
extension DQLParserState {
    // MARK: INSERT

    /// `INSERT INTO c [INITIAL] DOCUMENTS (doc), (doc) [ON ID CONFLICT (FAIL | DO UPDATE |
    /// DO NOTHING | DO UPDATE_LOCAL_DIFF)]`.
    mutating func insert() throws(DQLError) -> DQLStatement {
        advance()
        try expect(.into, "after INSERT")
        let (collection, hints) = try collectionReference(after: "INSERT INTO")
        let initial = accept(.initial)
        try expect(.documents, initial ? "after INITIAL" : "after the collection name")
        var documents: [DQLInsertDocument] = []
        repeat {
            try expect(.leftParen, "before a document")
            let position = current.position
            allowsPaths = false
            let document = try expression().expr
            allowsPaths = true
            if case .literal(let value) = document, value.objectValue == nil {
                throw DQLError(.invalidDocument, "a document must be an object, found \(DQLEvaluator.typeName(of: value))", at: position)
            }
            documents.append(DQLInsertDocument(expression: document, position: position))
            try expect(.rightParen, "after the document")
        } while accept(.comma)
        var insert = DQLInsert(collection: collection, typeHints: hints, documents: documents, initial: initial)
        expectedNext = initial ? "',' or the end of the statement" : "',', ON ID CONFLICT or the end of the statement"
        if at(.on) {
            if initial {
                throw DQLError(.invalidStatement, "INITIAL DOCUMENTS never overwrite an existing document; ON ID CONFLICT does not apply", at: current.position)
            }
            advance()
            try expect(.id, "after ON")
            try expect(.conflict, "after ON ID")
            if accept(.fail) {
                insert.conflict = .fail
            } else {
                try expect(.do, "or FAIL after ON ID CONFLICT")
                if accept(.update) {
                    insert.conflict = .doUpdate
                } else if accept(.nothing) {
                    insert.conflict = .doNothing
                } else if accept(.updateLocalDiff) {
                    insert.conflict = .doUpdateLocalDiff
                } else {
                    throw fail("UPDATE, NOTHING or UPDATE_LOCAL_DIFF after DO")
                }
            }
            expectedNext = "the end of the statement"
        }
        return .insert(insert)
    }

    // MARK: UPDATE

    /// `UPDATE c (SET path = value, … | UNSET path, … | APPLY path PN_INCREMENT BY n, …)+
    /// [WHERE condition]`. SET and UNSET may be combined; APPLY stands alone.
    mutating func update() throws(DQLError) -> DQLStatement {
        advance()
        let (collection, hints) = try collectionReference(after: "UPDATE")
        var assignments: [DQLAssignment] = []
        var unsets: [FieldPath] = []
        var increments: [DQLIncrement] = []
        var targets: [(FieldPath, DQLSourcePosition)] = []
        var sawClause = false
        while true {
            let clausePosition = current.position
            if accept(.set) {
                repeat {
                    let (path, position) = try writablePath("a field name after SET", &targets)
                    guard accept(.equal) else { throw fail("'=' after '\(path)'") }
                    assignments.append(DQLAssignment(path: path, value: try expression().expr, position: position))
                } while accept(.comma)
            } else if accept(.unset) {
                repeat {
                    unsets.append(try writablePath("a field name after UNSET", &targets).0)
                } while accept(.comma)
            } else if accept(.apply) {
                repeat {
                    let (path, position) = try writablePath("a counter field name after APPLY", &targets)
                    try expect(.pnIncrement, "after '\(path)'")
                    try expect(.by, "after PN_INCREMENT")
                    increments.append(DQLIncrement(path: path, amount: try expression().expr, position: position))
                } while accept(.comma)
            } else {
                break
            }
            sawClause = true
            if !increments.isEmpty, !(assignments.isEmpty && unsets.isEmpty) {
                throw DQLError(.invalidStatement, "APPLY cannot be combined with SET or UNSET in one UPDATE", at: clausePosition)
            }
        }
        guard sawClause else { throw fail("SET, UNSET or APPLY after the collection name") }
        expectedNext = "',', SET, UNSET, WHERE or the end of the statement"
        var whereClause: DQLExpression?
        if accept(.where) {
            whereClause = try expression().expr
            expectedNext = "the end of the statement"
        }
        if !increments.isEmpty {
            return .updateCounter(DQLUpdateCounter(collection: collection, typeHints: hints, increments: increments, whereClause: whereClause))
        }
        return .update(DQLUpdate(collection: collection, typeHints: hints, assignments: assignments, unsets: unsets, whereClause: whereClause))
    }

    /// A field path that an UPDATE may write: not `_id`, and neither equal to nor inside nor
    /// around another path the same statement writes (the result would depend on order).
    private mutating func writablePath(_ expected: String, _ targets: inout [(FieldPath, DQLSourcePosition)]) throws(DQLError) -> (FieldPath, DQLSourcePosition) {
        let (path, position) = try fieldPath(expected)
        if path.components.first == "_id" {
            throw DQLError(.invalidStatement, "the _id of a document cannot be changed", at: position)
        }
        for (other, _) in targets where path.hasPrefix(other) || other.hasPrefix(path) {
            let how = path == other ? "twice" : "both as '\(other)' and as '\(path)'"
            throw DQLError(.invalidStatement, "the statement writes the same field \(how)", at: position)
        }
        targets.append((path, position))
        return (path, position)
    }

    // MARK: DELETE, EVICT

    /// `DELETE FROM c [WHERE condition]`, `EVICT FROM c [WHERE condition]`.
    mutating func removal() throws(DQLError) -> DQLStatement {
        let isEvict = at(.evict)
        let verb = isEvict ? "EVICT" : "DELETE"
        advance()
        try expect(.from, "after \(verb)")
        let (collection, hints) = try collectionReference(after: "\(verb) FROM")
        var removal = DQLRemoval(collection: collection, typeHints: hints)
        expectedNext = "WHERE or the end of the statement"
        if accept(.where) {
            removal.whereClause = try expression().expr
            expectedNext = "the end of the statement"
        }
        return isEvict ? .evict(removal) : .delete(removal)
    }

    // MARK: Indexes

    /// `CREATE INDEX [IF NOT EXISTS] name ON collection (path, …)`.
    mutating func createIndex() throws(DQLError) -> DQLStatement {
        advance()
        try expect(.index, "after CREATE")
        var ifNotExists = false
        if accept(.if) {
            try expect(.not, "after IF")
            try expect(.exists, "after IF NOT")
            ifNotExists = true
        }
        let indexName = try name("an index name")
        try expect(.on, "after the index name")
        let collection = try collectionName(after: "ON")
        try expect(.leftParen, "before the indexed fields")
        var paths: [FieldPath] = []
        repeat {
            let (path, position) = try fieldPath("a field name to index")
            guard !paths.contains(path) else {
                throw DQLError(.invalidStatement, "'\(path)' is indexed twice", at: position)
            }
            paths.append(path)
        } while accept(.comma)
        try expect(.rightParen, "or ',' after an indexed field")
        return .createIndex(DQLCreateIndex(name: indexName, collection: collection, paths: paths, ifNotExists: ifNotExists))
    }

    /// `DROP INDEX [IF EXISTS] name [ON collection]`.
    mutating func dropIndex() throws(DQLError) -> DQLStatement {
        advance()
        try expect(.index, "after DROP")
        let ifExists = accept(.if)
        if ifExists { try expect(.exists, "after IF") }
        let indexName = try name("an index name")
        var collection: String?
        expectedNext = "ON or the end of the statement"
        if accept(.on) {
            collection = try name("a collection name after ON")
            expectedNext = "the end of the statement"
        }
        return .dropIndex(DQLDropIndex(name: indexName, collection: collection, ifExists: ifExists))
    }
}
