import ArcusCRDT
import ArcusMesh
import ArcusStore
import ArcusSync
import Logging

/// A setting `SHOW` reads and `ALTER SYSTEM` changes, named as its key in the configuration file
/// (Hardware/arcus.toml): the value in force is the one `ALTER SYSTEM` set (kept in the data
/// directory, `SettingsFile`), else the configuration's (file, ARCUS_* or command line), else the
/// default. A `live` setting takes effect at once in a running agent; a `restart` one when it
/// next starts.
enum RuntimeSetting: String, CaseIterable, Sendable {
    case logLevel = "log_level"
    case durability
    case transports
    case pendingHandshakes = "pending_handshakes"
    case bleLinks = "ble_links"
    case lazyPushHold = "lazy_push_hold_ms"
    case tombstoneLifetime = "tombstone_lifetime_s"

    /// The names, as the errors list them.
    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The setting called `name`, or an error listing every setting.
    static func named(_ name: String) throws(StoreError) -> RuntimeSetting {
        guard let setting = RuntimeSetting(rawValue: name.lowercased()) else {
            throw StoreError.invalidQuery("unknown setting \(name.debugDescription): the settings are \(names)")
        }
        return setting
    }

    var appliesLive: Bool {
        switch self {
        case .logLevel, .durability, .transports, .tombstoneLifetime: return true
        case .pendingHandshakes, .bleLinks, .lazyPushHold: return false
        }
    }

    var defaultValue: Value {
        switch self {
        case .logLevel: return "info"
        case .durability: return .string(Durability.full.rawValue)
        case .transports: return .string(TransportChoice.loopback.rawValue)
        case .pendingHandshakes: return .int(Int64(PendingHandshakes.Limits().total))
        case .bleLinks: return .int(Int64(ScarceLinkBudget().limit))
        case .lazyPushHold: return .int(Int64(SyncEngine.Options.lazyPushDefaultHold / .milliseconds(1)))
        case .tombstoneLifetime: return .int(Int64(AgentConfiguration.defaultTombstoneLifetimeSeconds))
        }
    }

    /// What the configuration gives it.
    func configured(_ configuration: AgentConfiguration) -> Value {
        switch self {
        case .logLevel: return .string(configuration.logLevel.rawValue)
        case .durability: return .string(configuration.durability.rawValue)
        case .transports: return .string(configuration.transports.map(\.rawValue).joined(separator: ","))
        case .pendingHandshakes: return .int(Int64(configuration.pendingHandshakes.total))
        case .bleLinks: return .int(Int64(configuration.scarceLinks.limit))
        case .lazyPushHold: return .int(Int64(configuration.lazyPushHoldMilliseconds))
        case .tombstoneLifetime: return .int(Int64(configuration.tombstoneLifetimeSeconds))
        }
    }

    /// Puts `value` (already `checked`) into `configuration`.
    func apply(_ value: Value, to configuration: inout AgentConfiguration) throws(StoreError) {
        let checked = try check(value)
        switch self {
        case .logLevel: configuration.logLevel = Logger.Level(rawValue: checked.stringValue ?? "") ?? .info
        case .durability: configuration.durability = Durability(rawValue: checked.stringValue ?? "") ?? .full
        case .transports: configuration.transports = (try? TransportChoice.parseList(checked.stringValue ?? "")) ?? configuration.transports
        case .pendingHandshakes: if case .int(let total) = checked { configuration.pendingHandshakes.total = Int(total) }
        case .bleLinks: if case .int(let limit) = checked { configuration.scarceLinks.limit = Int(limit) }
        case .lazyPushHold: if case .int(let hold) = checked { configuration.lazyPushHoldMilliseconds = Int(hold) }
        case .tombstoneLifetime: if case .int(let lifetime) = checked { configuration.tombstoneLifetimeSeconds = Int(lifetime) }
        }
    }

    /// `value` in the form SHOW gives it (`Debug` → `debug`, `lan, ble` → `lan,ble`), or an
    /// error that says what the setting takes.
    func check(_ value: Value) throws(StoreError) -> Value {
        switch self {
        case .logLevel:
            guard let text = value.stringValue, let level = Logger.Level(rawValue: text.lowercased()) else {
                throw refusal(value, "one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return .string(level.rawValue)
        case .durability:
            guard let text = value.stringValue, let durability = Durability(rawValue: text.lowercased()) else {
                throw refusal(value, "full (an acknowledged write survives a power cut) or normal (it survives the process being killed)")
            }
            return .string(durability.rawValue)
        case .transports:
            let accepted = "a list such as 'lan,cloud' of \(TransportChoice.allCases.map(\.rawValue).joined(separator: ", ")), at least one"
            guard let text = value.stringValue, !text.trimmingCharacters(in: .whitespaces).isEmpty,
                let choices = try? TransportChoice.parseList(text)
            else { throw refusal(value, accepted) }
            return .string(choices.map(\.rawValue).joined(separator: ","))
        case .pendingHandshakes:
            return try whole(value, in: 1...4096)
        case .bleLinks:
            return try whole(value, in: 1...32)
        case .lazyPushHold:
            return try whole(value, in: 0...Int64(AgentConfiguration.lazyPushHoldLimit))
        case .tombstoneLifetime:
            return try whole(value, in: 0...Int64(AgentConfiguration.tombstoneLifetimeLimit))
        }
    }

    private func whole(_ value: Value, in range: ClosedRange<Int64>) throws(StoreError) -> Value {
        guard case .int(let number) = value, range.contains(number) else {
            throw refusal(value, "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return .int(number)
    }

    private func refusal(_ value: Value, _ accepted: String) -> StoreError {
        StoreError.invalidQuery("\(rawValue) cannot be \(value.jsonString): it takes \(accepted)")
    }
}
