import ArcusCRDT
import ArcusStore
import Foundation

/// `arcus exec --data DIR "<DQL>" [--args JSON]`: one statement against a data directory.
public enum LocalExecution {
    /// Runs `statement` and returns `{"items": […], "mutatedDocumentIDs": […]}`. Errors in the
    /// statement or its arguments come back as a `CommandError` with exit status 2. The write is
    /// committed with `durability` before this returns, full by default as in the agent: what
    /// `arcus exec --data` prints has survived a power cut too.
    public static func run(data directory: String, statement: String, arguments json: String?, durability: Durability = .full) throws -> String {
        let arguments = try parseArguments(json)
        let store: Store
        do {
            var options = Store.Options()
            options.synchronous = durability.synchronous
            store = try DataDirectoryStore.open(URL(fileURLWithPath: directory), options: options).store
        } catch {
            throw CommandError("\(error)")
        }
        // SHOW and ALTER SYSTEM act on the settings the agent will start with: no agent runs here.
        let settingsFile = SettingsFile(dataDirectory: directory)
        let settings = AgentSettings(configured: [:], overrides: try settingsFile.read(), file: settingsFile, running: false)
        store.registerSettings(StoredSettingsStatements(settings: settings))
        do {
            return try store.execute(statement, arguments: arguments).jsonString
        } catch let error as DQLError {
            throw CommandError("error at \(error.description)", exitStatus: 2)
        } catch let error as StoreError {
            throw CommandError("error: \(error.description)", exitStatus: 2)
        }
    }

    static func parseArguments(_ json: String?) throws -> [String: Value] {
        guard let json else { return [:] }
        do {
            guard case .object(let object) = try Value(json: json) else {
                throw CommandError("--args must be a JSON object, such as '{\"color\": \"blue\"}'", exitStatus: 2)
            }
            return object
        } catch let error as JSONError {
            throw CommandError("--args is not valid JSON: \(error.description)", exitStatus: 2)
        }
    }
}
