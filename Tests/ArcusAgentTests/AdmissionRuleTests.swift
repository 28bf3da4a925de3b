import Foundation
import Testing
@testable import ArcusAgent

/// The connection policy's rules as the config gives them: what parses, what is refused with a
/// message that shows how to write it, and how names are matched.
@Suite("Admission rules")
struct AdmissionRuleTests {
    @Test("rules of every kind parse; a malformed one is refused naming the key and the forms")
    func parsing() throws {
        for text in ["*", "relay", "id:5f0C", "name:truck-*", "reads:orders", "writes:orders"] {
            #expect(throws: Never.self) { try AdmissionRule(parsing: text, key: "admission_allow") }
        }
        for (text, says) in [("truck", "is not a rule"), ("id:xyz", "not a peer id"), ("id:" + String(repeating: "a", count: 33), "not a peer id"),
                             ("name:", "names nothing"), ("host:a", "no kind known"), (String(repeating: "n", count: 300), "longer than")] {
            do {
                _ = try AdmissionRule(parsing: text, key: "admission_deny")
                Issue.record("\(text) parsed")
            } catch {
                #expect(error.message.contains("admission_deny") && error.message.contains(says) && error.message.contains("id:HEX"), "\(error.message)")
            }
        }
    }

    @Test("globs: * matches any run of characters, anywhere, nothing else is special")
    func globs() {
        let cases: [(String, String, Bool)] = [
            ("truck-*", "truck-7", true), ("truck-*", "truck-", true), ("truck-*", "trucks", false), ("*-7", "truck-7", true),
            ("t*k*7", "truck-7", true), ("t*k*8", "truck-7", false), ("*", "", true), ("", "", true), ("", "a", false),
            ("a?c", "abc", false), ("a?c", "a?c", true), ("**a", "bba", true), ("*ab*ab", "xabyabab", true),
        ]
        for (pattern, text, expected) in cases {
            #expect(AdmissionRule.glob(pattern, matches: text) == expected, "\(pattern) ~ \(text)")
        }
    }

    @Test("a config's admission keys are checked: a callback that is no http URL, a timeout without a callback or out of range")
    func configuration() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("admission-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cases: [(String, String)] = [
            (#""admission_callback": "ftp://x/admit""#, "http:// or https:// URL"),
            (#""admission_callback_timeout_s": 5"#, "goes with admission_callback"),
            (#""admission_callback": "http://127.0.0.1:9/admit", "admission_callback_timeout_s": 500"#, "between 0.1 and 120"),
            (#""admission_allow": ["nobody"]"#, "admission_allow"),
        ]
        for (members, says) in cases {
            let file = directory.appendingPathComponent("agent.json")
            try Data("{\(members)}".utf8).write(to: file)
            do {
                _ = try AgentConfiguration.resolve(dataDirectory: directory.path, configFile: file.path, name: nil, http: nil, listen: nil,
                                                   transports: nil, peers: [], subscriptions: [], environment: [:])
                Issue.record("\(members) was taken")
            } catch {
                #expect(error.message.contains(says), "\(members): \(error.message)")
            }
        }
    }
}
