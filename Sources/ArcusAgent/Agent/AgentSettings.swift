import ArcusCRDT
import ArcusStore
import Synchronization

/// The runtime settings of one data directory: the configuration's values, the overrides
/// `ALTER SYSTEM` made (kept in `SettingsFile`), and how to answer `SHOW` and `ALTER SYSTEM`.
/// A running agent applies a change before it is saved, so that a change it cannot make (a
/// transport that cannot start) is neither in force nor saved; without an agent
/// (`arcus exec --data`) a change is saved for the agent's next start.
final class AgentSettings: Sendable {
    /// When a change takes effect.
    enum Applies: String, Sendable {
        case live, restart
        /// Without a running agent every change waits for its start.
        case nextStart = "agent start"
    }

    /// What a statement asks for: settings to show, or changes to make (a nil value: back to
    /// the configuration's).
    enum Request {
        case show([RuntimeSetting])
        case change([(RuntimeSetting, Value?)])
    }

    let configured: [RuntimeSetting: Value]
    let file: SettingsFile
    /// False for `arcus exec --data`: nothing applies until an agent starts.
    let running: Bool
    private let overrides: Mutex<[RuntimeSetting: Value]>

    init(configured: [RuntimeSetting: Value], overrides: [RuntimeSetting: Value], file: SettingsFile, running: Bool) {
        self.configured = configured
        self.overrides = Mutex(overrides)
        self.file = file
        self.running = running
    }

    /// The value in force (or, without an agent, the one it will start with).
    func value(_ setting: RuntimeSetting) -> Value {
        overrides.withLock { $0[setting] } ?? configured[setting] ?? setting.defaultValue
    }

    /// Reads and checks `statement`, changing nothing: an unknown name lists the settings, a
    /// value a setting does not take says what it takes.
    func request(_ statement: DQLSettingsStatement) throws(StoreError) -> Request {
        switch statement {
        case .show(nil):
            return .show(RuntimeSetting.allCases)
        case .show(let name?):
            return .show([try RuntimeSetting.named(name)])
        case .set(let name, let value):
            let setting = try RuntimeSetting.named(name)
            return .change([(setting, try setting.check(value))])
        case .reset(let name?):
            return .change([(try RuntimeSetting.named(name), nil)])
        case .reset(nil):
            let overridden = overrides.withLock { Set($0.keys) }
            return .change(RuntimeSetting.allCases.filter(overridden.contains).map { ($0, nil) })
        }
    }

    /// Makes each change: `apply` puts the new value in force (it throws, and nothing changes,
    /// when it cannot), then the overrides are saved; if saving fails, the old value is put back.
    /// Returns the changed settings' rows.
    func change(_ changes: [(RuntimeSetting, Value?)], apply: (RuntimeSetting, Value) async throws -> Void) async throws -> [Value] {
        for (setting, override) in changes {
            let old = value(setting)
            let new = override ?? configured[setting] ?? setting.defaultValue
            if running && setting.appliesLive && new != old { try await apply(setting, new) }
            do {
                try save(setting, override)
            } catch {
                if running && setting.appliesLive && new != old { try? await apply(setting, old) }
                throw error
            }
        }
        return rows(changes.map(\.0))
    }

    /// Saves each change for the agent's next start, applying nothing (`arcus exec --data`).
    func saveForStart(_ changes: [(RuntimeSetting, Value?)]) throws(StoreError) -> [Value] {
        for (setting, override) in changes { try save(setting, override) }
        return rows(changes.map(\.0))
    }

    private func save(_ setting: RuntimeSetting, _ override: Value?) throws(StoreError) {
        try overrides.withLock { overrides throws(StoreError) in
            var changed = overrides
            changed[setting] = override
            try file.write(changed)
            overrides = changed
        }
    }

    /// SHOW's rows: `{"name", "value", "default", "source", "applies"}`, in the registry's order.
    func rows(_ settings: [RuntimeSetting]) -> [Value] {
        let overridden = overrides.withLock { $0 }
        return settings.map { setting in
            let source: String
            if overridden[setting] != nil {
                source = "alter system"
            } else if let configured = configured[setting], configured != setting.defaultValue {
                source = "config"
            } else {
                source = "default"
            }
            let applies: Applies = running ? (setting.appliesLive ? .live : .restart) : .nextStart
            return .object([
                "_id": .string(setting.rawValue), "name": .string(setting.rawValue), "value": value(setting),
                "default": setting.defaultValue, "source": .string(source), "applies": .string(applies.rawValue),
            ])
        }
    }
}

/// SHOW and ALTER SYSTEM through `Store.execute`: without an agent (`arcus exec --data`) they read
/// and change the settings the agent will start with; in a running agent, where a change must
/// take effect (a transport starting is asynchronous), ALTER SYSTEM goes through `Agent.execute`.
struct StoredSettingsStatements: StoreSettings {
    let settings: AgentSettings

    func run(_ statement: DQLSettingsStatement) throws -> [Value] {
        switch try settings.request(statement) {
        case .show(let shown):
            return settings.rows(shown)
        case .change(let changes):
            guard !settings.running else {
                throw StoreError.invalidQuery(
                    "ALTER SYSTEM changes a running agent through Agent.execute, POST /v1/execute or `arcus exec --agent URL`, which apply it at once"
                )
            }
            return try settings.saveForStart(changes)
        }
    }
}
