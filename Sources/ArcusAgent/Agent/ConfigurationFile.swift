import Foundation
import TOMLKit

/// Reads `arcus agent --config FILE`: TOML (Hardware/arcus.toml documents every key with its
/// default), or JSON when the name ends in `.json`. Either becomes one JSON-shaped object, so
/// that both are checked and decoded the same way; a key the agent does not know is an error, so
/// that a misspelt option is never silently ignored.
enum ConfigurationFile {
    static func read(_ path: String, keys: Set<String>) throws(CommandError) -> [String: Any] {
        let text: String
        do {
            text = try String(contentsOf: URL(fileURLWithPath: path), encoding: .utf8)
        } catch {
            throw CommandError("cannot read the configuration file \(path): \(error.localizedDescription)", exitStatus: 2)
        }
        let object: [String: Any]
        if path.lowercased().hasSuffix(".json") {
            guard let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                throw CommandError("the configuration file \(path) is not a JSON object of agent options", exitStatus: 2)
            }
            object = parsed
        } else {
            object = try toml(text, path: path)
        }
        let unknown = Set(object.keys).subtracting(keys).sorted()
        guard unknown.isEmpty else {
            throw CommandError("the configuration file \(path) has unknown keys \(unknown); the keys are \(keys.sorted())", exitStatus: 2)
        }
        return object
    }

    private static func toml(_ text: String, path: String) throws(CommandError) -> [String: Any] {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            let at = error.source.begin
            throw CommandError("the configuration file \(path) is not valid TOML: line \(at.line), column \(at.column): \(error.description)", exitStatus: 2)
        } catch {
            throw CommandError("the configuration file \(path) is not valid TOML: \(error)", exitStatus: 2)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(table.convert(to: .json).utf8)) as? [String: Any] else {
            throw CommandError("the configuration file \(path) could not be read as options", exitStatus: 2)
        }
        return object
    }

    /// A decoding error in the words of the file: which key, what it should have been.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "\(key) should be \(describe(type))"
        case .dataCorrupted(let context):
            return context.debugDescription
        case .keyNotFound(let key, _):
            return "\(key.stringValue) is missing"
        @unknown default:
            return "\(error)"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type: return "a whole number"
        case is Double.Type: return "a number"
        case is Bool.Type: return "true or false"
        case is [String].Type, is [Any].Type: return "a list of strings"
        default: return "\(type)"
        }
    }
}

/// Options from the environment, over the file's: `ARCUS_<KEY>` for each configuration key
/// (ARCUS_HTTP=127.0.0.1:4848, ARCUS_TRANSPORTS=lan,cloud, ARCUS_CLOUD_STORE_AND_FORWARD=false).
/// Lists are comma-separated, except ARCUS_SUBSCRIBE, one query per line (queries hold commas).
/// Other ARCUS_* variables are not options and are left alone.
enum ConfigurationOverrides {
    private static let lists: Set<String> = ["transports", "peers", "cloud", "admission_allow", "admission_deny"]
    private static let integers: Set<String> = ["ble_links", "ble_psm", "cloud_stored_max_bytes", "pending_handshakes", "pending_handshakes_per_source", "lazy_push_hold_ms", "tombstone_lifetime_s"]
    private static let numbers: Set<String> = ["cloud_stored_max_age_s", "handshake_deadline_s", "admission_callback_timeout_s"]
    private static let flags: Set<String> = ["cloud_store_and_forward", "release_startup_memory", "http_expose", "mdns"]

    static func variable(for key: String) -> String { "ARCUS_" + key.uppercased() }

    static func read(_ environment: [String: String], keys: Set<String>) throws(CommandError) -> [String: Any] {
        var object: [String: Any] = [:]
        for key in keys.sorted() {
            let name = variable(for: key)
            guard let text = environment[name] else { continue }
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if key == "subscribe" {
                object[key] = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            } else if lists.contains(key) {
                object[key] = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            } else if integers.contains(key) {
                guard let value = Int(trimmed) else { throw CommandError("\(name) must be a whole number; got \(text.debugDescription)", exitStatus: 2) }
                object[key] = value
            } else if numbers.contains(key) {
                guard let value = Double(trimmed) else { throw CommandError("\(name) must be a number; got \(text.debugDescription)", exitStatus: 2) }
                object[key] = value
            } else if flags.contains(key) {
                guard let value = Bool(trimmed.lowercased()) else { throw CommandError("\(name) must be true or false; got \(text.debugDescription)", exitStatus: 2) }
                object[key] = value
            } else {
                object[key] = text
            }
        }
        return object
    }
}
