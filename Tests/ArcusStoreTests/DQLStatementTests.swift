import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("DQL statements")
struct DQLStatementTests {
    // MARK: SELECT

    @Test("SELECT * FROM a collection, keywords in any case, optional semicolon")
    func selectAll() throws {
        for text in ["SELECT * FROM cars", "select * from cars;", "SeLeCt * FrOm cars ;  "] {
            let s = try DQL.select(text)
            #expect(s.collection == "cars")
            #expect(s.projection == .all)
            #expect(s.whereClause == nil && s.orderBy.isEmpty && s.limit == nil && s.offset == nil)
        }
    }

    @Test("SELECT with every clause")
    func selectFull() throws {
        let s = try DQL.select("SELECT make, owner.name AS who, year + 1 FROM cars WHERE color = 'red' ORDER BY year DESC, make ASC, _id LIMIT 10 OFFSET 20")
        guard case .items(let items) = s.projection else { Issue.record("expected items"); return }
        #expect(items.map(\.name) == ["make", "who", "$3"])
        #expect(items.map(\.alias) == [nil, "who", nil])
        #expect(s.whereClause?.description == "(color = 'red')")
        #expect(s.orderBy.map(\.descending) == [true, false, false])
        #expect(s.orderBy.map(\.expression.description) == ["year", "make", "_id"])
        #expect(s.limit == .literal(10))
        #expect(s.offset == .literal(20))
    }

    @Test("ORDER BY may name a projection by its alias")
    func orderByAlias() throws {
        let s = try DQL.select("SELECT year + 1 AS next, make FROM cars ORDER BY next DESC, make, year")
        #expect(s.orderBy.map(\.expression.description) == ["(year + 1)", "make", "year"])
    }

    @Test("LIMIT and OFFSET take integer literals or arguments, in either order")
    func limitOffset() throws {
        let s = try DQL.select("SELECT * FROM c OFFSET $args.skip LIMIT :n")
        #expect(s.limit == .argument(name: "n", position: DQLSourcePosition(offset: 40, line: 1, column: 41)))
        if case .argument(let name, _)? = s.offset { #expect(name == "skip") } else { Issue.record("offset") }
        #expect(DQL.parseError("SELECT * FROM c LIMIT -1")?.kind == .syntax)
        #expect(DQL.parseError("SELECT * FROM c LIMIT 1.5")?.kind == .syntax)
    }

    @Test("projection names: alias, else last field name, else $n; duplicates are refused")
    func projectionNames() throws {
        let s = try DQL.select("SELECT a.b.c, `x y`, d[0], lower(e), f['g'] FROM t")
        guard case .items(let items) = s.projection else { Issue.record("expected items"); return }
        #expect(items.map(\.name) == ["c", "x y", "$3", "$4", "g"])
        #expect(DQL.parseError("SELECT a.c, b.c FROM t")?.description == "line 1, column 13: two projections are named 'c'; give one of them another name with AS")
        #expect(try DQL.statement("SELECT a.c, b.c AS c2 FROM t").isReadOnly)
    }

    @Test("COLLECTION with type hints gives TypeHints keyed by field path")
    func typeHints() throws {
        let s = try DQL.select("SELECT * FROM COLLECTION cars (features MAP, visits PN_COUNTER, a.b REGISTER, photo ATTACHMENT, `odd key`.x counter) WHERE features.trim = 'standard'")
        #expect(s.collection == "cars")
        #expect(s.typeHints.fields == [
            ["features"]: .map, ["visits"]: .counter, ["a", "b"]: .register, ["photo"]: .attachment, ["odd key", "x"]: .counter,
        ])
        #expect(s.typeHints.objects == .map)
        // Without type hints COLLECTION is still accepted; a collection may be named "collection".
        #expect(try DQL.select("SELECT * FROM COLLECTION cars").collection == "cars")
        #expect(try DQL.select("SELECT * FROM collection WHERE a = 1").collection == "collection")
        #expect(try DQL.select("SELECT * FROM `select`").collection == "select")
    }

    // MARK: INSERT

    @Test("INSERT INTO … DOCUMENTS with arguments and literal objects")
    func insert() throws {
        guard case .insert(let s) = try DQL.statement("INSERT INTO cars DOCUMENTS (:doc), ({'_id': 'a', 'color': 'red'}), (:other)") else {
            Issue.record("expected INSERT"); return
        }
        #expect(s.collection == "cars")
        #expect(s.conflict == .fail)
        #expect(!s.initial)
        #expect(s.documents.map(\.expression.description) == [":doc", "{'_id': 'a', 'color': 'red'}", ":other"])
        #expect(s.documents.map(\.position.column) == [29, 37, 69])
    }

    @Test("ON ID CONFLICT policies")
    func conflictPolicies() throws {
        let cases: [(String, DQLConflictPolicy)] = [
            ("", .fail), (" ON ID CONFLICT FAIL", .fail), (" on id conflict do update", .doUpdate),
            (" ON ID CONFLICT DO NOTHING", .doNothing), (" ON ID CONFLICT DO UPDATE_LOCAL_DIFF", .doUpdateLocalDiff),
        ]
        for (clause, policy) in cases {
            guard case .insert(let s) = try DQL.statement("INSERT INTO c DOCUMENTS (:d)" + clause) else { Issue.record("\(clause)"); continue }
            #expect(s.conflict == policy, "\(clause)")
        }
        #expect(DQL.parseError("INSERT INTO c DOCUMENTS (:d) ON ID CONFLICT DO SOMETHING")?.description
            == "line 1, column 48: expected UPDATE, NOTHING or UPDATE_LOCAL_DIFF after DO, found 'SOMETHING'")
    }

    @Test("INSERT with type hints and INITIAL DOCUMENTS")
    func insertVariants() throws {
        guard case .insert(let s) = try DQL.statement("INSERT INTO COLLECTION cars (features MAP) INITIAL DOCUMENTS ({'_id': 1.5e0 + 1})") else {
            Issue.record("expected INSERT"); return
        }
        #expect(s.initial)
        #expect(s.typeHints.fields == [["features"]: .map])
        #expect(DQL.parseError("INSERT INTO c INITIAL DOCUMENTS (:d) ON ID CONFLICT DO UPDATE")?.kind == .invalidStatement)
    }

    @Test("INSERT documents cannot read fields, and a literal document must be an object")
    func insertDocumentRules() throws {
        #expect(DQL.parseError("INSERT INTO c DOCUMENTS ({'a': b})")?.description
            == "line 1, column 32: a document cannot refer to a field ('b') while it is inserted; write arguments as :name")
        #expect(DQL.parseError("INSERT INTO c DOCUMENTS ([1, 2])")?.description == "line 1, column 26: a document must be an object, found array")
        #expect(DQL.parseError("INSERT INTO c DOCUMENTS ('x')")?.kind == .invalidDocument)
    }

    // MARK: UPDATE

    @Test("UPDATE … SET field paths, including bracketed keys")
    func update() throws {
        guard case .update(let s) = try DQL.statement("UPDATE cars SET a = 1, b.c = 'x' || 'y', d['e f'] = :v WHERE _id = '123'") else {
            Issue.record("expected UPDATE"); return
        }
        #expect(s.assignments.map(\.path) == [["a"], ["b", "c"], ["d", "e f"]])
        #expect(s.assignments.map(\.value.description) == ["1", "('x' || 'y')", ":v"])
        #expect(s.unsets.isEmpty)
        #expect(s.whereClause?.description == "(_id = '123')")
    }

    @Test("UPDATE … UNSET, alone or after SET; no WHERE means every document")
    func unset() throws {
        guard case .update(let s) = try DQL.statement("UPDATE cars SET a = 1 UNSET b.c, d") else { Issue.record("UPDATE"); return }
        #expect(s.unsets == [["b", "c"], ["d"]])
        #expect(s.whereClause == nil)
        guard case .update(let t) = try DQL.statement("update cars unset a where x = 1") else { Issue.record("UPDATE"); return }
        #expect(t.assignments.isEmpty && t.unsets == [["a"]])
    }

    @Test("UPDATE refuses writing _id, the same field twice, a field and its parent, and array elements")
    func updateConflicts() throws {
        #expect(DQL.parseError("UPDATE c SET _id = 'b'")?.description == "line 1, column 14: the _id of a document cannot be changed")
        #expect(DQL.parseError("UPDATE c SET a = 1, a = 2")?.kind == .invalidStatement)
        #expect(DQL.parseError("UPDATE c SET a.b = 1 UNSET a")?.description == "line 1, column 28: the statement writes the same field both as 'a.b' and as 'a'")
        #expect(DQL.parseError("UPDATE c SET a[0] = 1")?.kind == .syntax)
        #expect(DQL.parseError("UPDATE c WHERE a = 1")?.description == "line 1, column 10: expected SET, UNSET or APPLY after the collection name, found 'WHERE'")
    }

    @Test("UPDATE … APPLY … PN_INCREMENT BY is a counter update")
    func counterUpdate() throws {
        guard case .updateCounter(let s) = try DQL.statement("UPDATE COLLECTION orders (visits PN_COUNTER, stats.n PN_COUNTER) APPLY visits PN_INCREMENT BY 1, stats.n PN_INCREMENT BY -2.5 WHERE _id = :id") else {
            Issue.record("expected a counter update"); return
        }
        #expect(s.collection == "orders")
        #expect(s.increments.map(\.path) == [["visits"], ["stats", "n"]])
        #expect(s.increments.map(\.amount) == [.literal(.int(1)), .literal(.double(-2.5))])
        #expect(s.typeHints.fields[["visits"]] == .counter)
        #expect(DQL.parseError("UPDATE c SET a = 1 APPLY n PN_INCREMENT BY 1")?.kind == .invalidStatement)
    }

    // MARK: DELETE, EVICT, indexes

    @Test("DELETE and EVICT, with or without WHERE")
    func removals() throws {
        guard case .delete(let d) = try DQL.statement("DELETE FROM cars WHERE color = 'red'") else { Issue.record("DELETE"); return }
        #expect(d.collection == "cars" && d.whereClause != nil)
        guard case .evict(let e) = try DQL.statement("EVICT FROM cars") else { Issue.record("EVICT"); return }
        #expect(e.collection == "cars" && e.whereClause == nil)
        guard case .delete(let all) = try DQL.statement("delete from COLLECTION cars (f MAP)") else { Issue.record("DELETE"); return }
        #expect(all.typeHints.fields == [["f"]: .map])
    }

    @Test("CREATE INDEX and DROP INDEX")
    func indexes() throws {
        #expect(try DQL.statement("CREATE INDEX by_color ON cars (color)") == .createIndex(DQLCreateIndex(name: "by_color", collection: "cars", paths: [["color"]])))
        #expect(try DQL.statement("CREATE INDEX IF NOT EXISTS i ON cars (owner.name, `year`)")
            == .createIndex(DQLCreateIndex(name: "i", collection: "cars", paths: [["owner", "name"], ["year"]], ifNotExists: true)))
        #expect(try DQL.statement("DROP INDEX by_color") == .dropIndex(DQLDropIndex(name: "by_color")))
        #expect(try DQL.statement("drop index if exists i on cars;") == .dropIndex(DQLDropIndex(name: "i", collection: "cars", ifExists: true)))
        #expect(DQL.parseError("CREATE INDEX i ON cars (a, a)")?.kind == .invalidStatement)
    }

    @Test("collection, type hints and read-only are available on every statement")
    func statementAccessors() throws {
        #expect(try DQL.statement("UPDATE COLLECTION c (m MAP) SET m.x = 1").typeHints.fields == [["m"]: .map])
        #expect(try DQL.statement("EVICT FROM c").collection == "c")
        #expect(try DQL.statement("DROP INDEX i").collection == nil)
        #expect(try !DQL.statement("DELETE FROM c").isReadOnly)
    }

    @Test("the description of a statement parses back to the same statement")
    func statementRoundTrip() throws {
        let texts = [
            "SELECT a AS `b c`, d.e FROM COLLECTION cars (features MAP, v PN_COUNTER) WHERE x IN [1, 2] AND NOT y LIKE 'a%' ORDER BY a DESC LIMIT 3 OFFSET :o",
            "INSERT INTO cars DOCUMENTS ({'_id': {'a': 1}, 'b': [true, NULL]}), (:d) ON ID CONFLICT DO UPDATE",
            "INSERT INTO cars INITIAL DOCUMENTS (:d)",
            "UPDATE cars SET a = (b + 1) * 2, `from` = 'x' UNSET c.d WHERE _id = 'x'",
            "UPDATE COLLECTION c (n PN_COUNTER) APPLY n PN_INCREMENT BY 2",
            "EVICT FROM cars WHERE ts < '2026-01-01'",
            "DELETE FROM `select`",
            "CREATE INDEX IF NOT EXISTS i ON c (a.b)",
            "DROP INDEX IF EXISTS i ON c",
        ]
        for text in texts {
            let statement = try DQL.statement(text)
            let reprinted = statement.description
            #expect(try DQL.statement(reprinted).description == reprinted, "\(text)")
        }
    }
}
