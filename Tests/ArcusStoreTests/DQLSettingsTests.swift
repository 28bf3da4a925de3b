import ArcusCRDT
import Synchronization
import Testing

@testable import ArcusStore

/// `SHOW [ALL | name]` and `ALTER SYSTEM SET name = value | RESET name | ALL`: parsed by the store,
/// answered by the settings its host registered.
@Suite("DQL SHOW and ALTER SYSTEM")
struct DQLSettingsTests {
    @Test("each settings statement parses to what it asks for", arguments: [
        ("SHOW", DQLSettingsStatement.show(name: nil)),
        ("show all;", .show(name: nil)),
        ("SHOW log_level", .show(name: "log_level")),
        ("SHOW transport.lan", .show(name: "transport.lan")),
        ("SHOW `all`", .show(name: "all")),
        ("ALTER SYSTEM SET log_level = 'debug'", .set(name: "log_level", value: "debug")),
        ("alter system set log_level to debug", .set(name: "log_level", value: "debug")),
        ("ALTER SYSTEM SET pending_handshakes = 32", .set(name: "pending_handshakes", value: 32)),
        ("ALTER SYSTEM SET x = -2.5", .set(name: "x", value: -2.5)),
        ("ALTER SYSTEM SET transport.lan = false", .set(name: "transport.lan", value: false)),
        ("ALTER SYSTEM SET mdns = TRUE", .set(name: "mdns", value: true)),
        ("ALTER SYSTEM RESET durability", .reset(name: "durability")),
        ("ALTER SYSTEM RESET ALL", .reset(name: nil)),
    ])
    func parses(text: String, expected: DQLSettingsStatement) throws {
        #expect(try DQLParser.parse(text) == .settings(expected))
        // What it prints parses back to the same statement.
        #expect(try DQLParser.parse(expected.description) == .settings(expected), "\(expected.description)")
    }

    @Test("a malformed settings statement names its line, column and what was expected", arguments: [
        ("SHOW log_level extra", "line 1, column 16: expected the end of the statement (SHOW shows one setting or ALL), found 'extra'"),
        ("SHOW 5", "line 1, column 6: expected a setting's name or ALL after SHOW, found number 5"),
        ("ALTER TABLE cars", "line 1, column 7: expected SYSTEM after ALTER (ALTER SYSTEM SET name = value, or ALTER SYSTEM RESET name), found 'TABLE'"),
        ("ALTER SYSTEM log_level = 1", "line 1, column 14: expected SET or RESET after ALTER SYSTEM, found 'log_level'"),
        ("ALTER SYSTEM SET log_level 'debug'", "line 1, column 28: expected '=' or TO after the setting's name, found string 'debug'"),
        ("ALTER SYSTEM SET log_level =", "line 1, column 29: expected a value (a string, a number, true or false) after '=', found end of input"),
        ("ALTER SYSTEM SET log_level = :level", "line 1, column 30: expected a value (a string, a number, true or false) after '=', found argument :level"),
        ("ALTER SYSTEM SET x = - 'a'", "line 1, column 24: expected a number after the sign, found string 'a'"),
        ("ALTER SYSTEM SET x = 1 2", "line 1, column 24: expected the end of the statement, found number 2"),
        ("ALTER SYSTEM RESET", "line 1, column 19: expected a setting's name or ALL after ALTER SYSTEM RESET, found end of input"),
        ("\nALTER SYSTEM SET ALL = 1", "line 2, column 18: expected a setting's name after ALTER SYSTEM SET, found 'ALL'"),
        ("EXPLAIN SHOW ALL", "line 1, column 9: unknown statement 'SHOW': expected SELECT, INSERT, UPDATE, DELETE, EVICT, CREATE INDEX or DROP INDEX after EXPLAIN"),
    ])
    func errors(text: String, message: String) {
        #expect(DQL.parseError(text)?.description == message)
    }

    @Test("ALL and the other new keywords are still field names")
    func keywordsStayNames() throws {
        let select = try DQL.select("SELECT all, show, system, reset, alter, to FROM c WHERE all = 1")
        #expect(select.collection == "c")
    }

    /// Answers as a host would, keeping what it was asked.
    final class RecordingSettings: StoreSettings {
        let asked = Mutex<[DQLSettingsStatement]>([])
        func run(_ statement: DQLSettingsStatement) throws -> [Value] {
            asked.withLock { $0.append(statement) }
            if case .set(let name, _) = statement, name == "bad" { throw StoreError.invalidQuery("bad cannot be set") }
            return [["name": .string(statement.name ?? "all")]]
        }
    }

    @Test("the store hands settings statements to the registered settings, and refuses them without")
    func storeHandsThemOver() throws {
        let t = try TemporaryStore()
        #expect {
            try t.store.execute("SHOW ALL")
        } throws: { error in
            "\(error)".contains("this store has none: run them with `arcus exec --agent URL` or `arcus exec --data DIR`")
        }
        let settings = RecordingSettings()
        t.store.registerSettings(settings)
        let shown = try t.store.execute("SHOW log_level")
        #expect(shown.items == [["name": "log_level"]])
        #expect(shown.commitID == nil)
        #expect {
            try t.store.execute("ALTER SYSTEM SET bad = 1")
        } throws: { error in
            "\(error)".contains("bad cannot be set")
        }
        #expect(settings.asked.withLock { $0 } == [.show(name: "log_level"), .set(name: "bad", value: 1)])
        // Inside a write transaction it would not roll back with it: refused.
        #expect(throws: StoreError.self) { try t.store.write { try $0.execute("SHOW ALL") } }
        #expect(throws: StoreError.self) { try t.store.registerObserver("SHOW ALL") { _ in } }
    }
}
