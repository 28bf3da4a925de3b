import Foundation

/// A transport named in `--transports`. Every name the design has is accepted as a name; only
/// those the agent can run today may be chosen, and the others say which work brings them.
public enum TransportChoice: String, Sendable, CaseIterable {
    case lan, ble, cloud, loopback

    /// Why the agent cannot run this transport yet, or nil when it can.
    public var unavailableBecause: String? {
        switch self {
        case .loopback, .lan, .ble: return nil
        case .cloud: return "the cloud relay transport (ArcusCloud) is not built yet"
        }
    }

    /// Parses `lan,ble,cloud,loopback`: names known, no repeats, at least one, each available.
    public static func parseList(_ text: String) throws(CommandError) -> [TransportChoice] {
        var choices: [TransportChoice] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces).lowercased()
            guard let choice = TransportChoice(rawValue: name) else {
                let known = allCases.map(\.rawValue).joined(separator: ", ")
                throw CommandError("--transports: unknown transport \(name.debugDescription); the transports are \(known)", exitStatus: 2)
            }
            if let reason = choice.unavailableBecause {
                throw CommandError("--transports: cannot use \(name): \(reason). Use --transports lan, ble or loopback", exitStatus: 2)
            }
            if !choices.contains(choice) { choices.append(choice) }
        }
        return choices
    }
}
