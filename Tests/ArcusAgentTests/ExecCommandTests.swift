import ArcusCRDT
import Foundation
import Testing

/// `arcus exec`, run as a user runs it.
@Suite("arcus exec")
struct ExecCommandTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-exec-\(UUID().uuidString)").path

    func exec(_ statement: String, args: String? = nil) async throws -> ArcusProcess.Outcome {
        try await ArcusProcess.run(["exec", "--data", data, statement] + (args.map { ["--args", $0] } ?? []))
    }

    @Test("writes and reads print one JSON object with items and mutatedDocumentIDs")
    func roundTrip() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let insert = try await exec("INSERT INTO cars DOCUMENTS (:doc), ({'_id': 'b', 'color': 'red'})", args: #"{"doc": {"_id": "a", "color": "blue", "year": 2018}}"#)
        #expect(insert.status == 0, "\(insert.standardError)")
        // A write says its commit: the change-log position of its last change (a fresh store's 2nd).
        #expect(try Value(json: insert.standardOutput) == ["items": [], "mutatedDocumentIDs": ["a", "b"], "commit_id": 2])
        let select = try await exec("SELECT * FROM cars WHERE color = :c", args: #"{"c": "blue"}"#)
        #expect(select.status == 0)
        #expect(try Value(json: select.standardOutput) == ["items": [["_id": "a", "color": "blue", "year": 2018]], "mutatedDocumentIDs": []])
    }

    @Test("aggregates, GROUP BY, HAVING, DISTINCT and IN (…) through arcus exec; an ungrouped field is an error")
    func aggregates() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let insert = try await exec("""
            INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford', 'year': 2018}), ({'_id': 'b', 'make': 'ford', 'year': 2021}),
            ({'_id': 'c', 'make': 'audi', 'year': 2015}), ({'_id': 'd', 'year': 2019})
            """)
        #expect(insert.status == 0, "\(insert.standardError)")
        let cases: [(statement: String, items: Value)] = [
            ("SELECT COUNT(*) FROM cars", [["count(*)": 4]]),
            ("SELECT make, COUNT(*) AS n FROM cars GROUP BY make", [["make": .null, "n": 1], ["make": "audi", "n": 1], ["make": "ford", "n": 2]]),
            ("SELECT make, MAX(year) AS newest FROM cars GROUP BY make HAVING COUNT(*) > 1", [["make": "ford", "newest": 2021]]),
            ("SELECT DISTINCT make FROM cars WHERE make IS NOT MISSING ORDER BY make DESC", [["make": "ford"], ["make": "audi"]]),
            ("SELECT _id FROM cars WHERE make IN ('audi') OR year IN (2019, 2020)", [["_id": "c"], ["_id": "d"]]),
        ]
        for c in cases {
            let outcome = try await exec(c.statement)
            #expect(outcome.status == 0, "\(c.statement): \(outcome.standardError)")
            #expect(try Value(json: outcome.standardOutput) == ["items": c.items, "mutatedDocumentIDs": []], "\(c.statement)")
        }
        let bad = try await exec("SELECT make, year FROM cars GROUP BY make")
        #expect(bad.status == 2)
        #expect(bad.standardError.contains("line 1, column 14: 'year' is neither in GROUP BY nor inside an aggregate"), "\(bad.standardError)")
    }

    @Test("EXPLAIN prints the plan as the single item, names the index once there is one, and writes nothing")
    func explain() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let insert = try await exec("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford'}), ({'_id': 'b', 'make': 'kia'}), ({'_id': 'c', 'make': 'ford'})")
        #expect(insert.status == 0, "\(insert.standardError)")
        let statement = "EXPLAIN SELECT * FROM cars WHERE make = 'ford'"
        let scan = try await exec(statement)
        #expect(scan.status == 0, "\(scan.standardError)")
        let scanned = try Value(json: scan.standardOutput)
        #expect(scanned[path: ["mutatedDocumentIDs"]] == [])
        guard case .array(let items)? = scanned[path: ["items"]], items.count == 1 else {
            Issue.record("expected one item: \(scan.standardOutput)")
            return
        }
        #expect(items[0][path: ["access"]] == ["type": "scan"])
        #expect(items[0][path: ["estimated_rows"]] == 3)
        #expect(try await exec("CREATE INDEX cars_make ON cars (make)").status == 0)
        let indexed = try Value(json: try await exec(statement).standardOutput)
        #expect(indexed.arrayItem(0, "access", "index") == "cars_make")
        #expect(indexed.arrayItem(0, "estimated_rows") == 2)
        let update = try await exec("EXPLAIN UPDATE cars SET make = 'vw'")
        #expect(update.status == 0, "\(update.standardError)")
        #expect(try Value(json: update.standardOutput).objectValue?.keys.contains("commit_id") == false)
        #expect(try Value(json: update.standardOutput).arrayItem(0, "operation") == "update")
        let refused = try await exec("PROFILE DELETE FROM cars")
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("line 1, column 9: PROFILE runs SELECTs only"), "\(refused.standardError)")
        let count = try await exec("SELECT COUNT(*) AS n FROM cars WHERE make = 'ford'")
        #expect(try Value(json: count.standardOutput) == ["items": [["n": 2]], "mutatedDocumentIDs": []])
    }

    @Test("bad statements and arguments: the position on stderr, exit status 2, nothing written")
    func badInput() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        _ = try await exec("INSERT INTO cars DOCUMENTS ({'_id': 'a'})")
        let cases: [(statement: String, args: String?, says: String)] = [
            ("SELECT * FRM cars", nil, "line 1, column 10"),
            ("INSERT INTO cars DOCUMENTS ({'_id': 'b'}),\n ({'_id': 'c',})", nil, "line 2, column"),
            ("INSERT INTO cars DOCUMENTS (:doc)", nil, "doc"),
            ("INSERT INTO cars DOCUMENTS (:doc)", "{not json", "--args is not valid JSON"),
            ("INSERT INTO cars DOCUMENTS (:doc)", "[1, 2]", "--args must be a JSON object"),
            ("INSERT INTO cars DOCUMENTS ({'_id': 'a'})", nil, "already exists"),
            ("UPDATE cars SET _id = 'z'", nil, "_id"),
        ]
        for bad in cases {
            let outcome = try await exec(bad.statement, args: bad.args)
            #expect(outcome.status == 2, "\(bad.statement): exit \(outcome.status)")
            #expect(outcome.standardError.contains(bad.says), "\(bad.statement): stderr was \(outcome.standardError)")
            #expect(outcome.standardOutput.isEmpty)
        }
        let left = try await exec("SELECT * FROM cars")
        #expect(try Value(json: left.standardOutput) == ["items": [["_id": "a"]], "mutatedDocumentIDs": []])
    }

    @Test("a second process on the same data directory gets a clear error")
    func directoryInUse() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-exec-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let writer = try ArcusProcess.start(["bench", "write-load", "--data", data], output: output)
        defer { writer.dismiss() }
        // Wait until the writer holds the directory (it has written something).
        for _ in 0..<200 where ((try? Data(contentsOf: output))?.isEmpty ?? true) { try await Task.sleep(for: .milliseconds(20)) }
        let outcome = try await exec("SELECT * FROM load LIMIT 1")
        #expect(outcome.status != 0)
        #expect(outcome.standardError.contains("in use by process \(writer.processIdentifier)"), "\(outcome.standardError)")
    }
}

extension Value {
    /// The field at `path` inside the `index`-th element of this object's `items`.
    fileprivate func arrayItem(_ index: Int, _ path: String...) -> Value? {
        guard case .array(let items)? = self[path: ["items"]], index < items.count else { return nil }
        return items[index][path: FieldPath(path)]
    }
}
