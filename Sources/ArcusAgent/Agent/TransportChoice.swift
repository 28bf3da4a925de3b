import Foundation

/// A transport named in `--transports`.
public enum TransportChoice: String, Sendable, CaseIterable {
    case lan, ble, cloud, loopback

    /// Parses `lan,ble,cloud,loopback`: names known, no repeats, at least one.
    public static func parseList(_ text: String) throws(CommandError) -> [TransportChoice] {
        var choices: [TransportChoice] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces).lowercased()
            guard let choice = TransportChoice(rawValue: name) else {
                let known = allCases.map(\.rawValue).joined(separator: ", ")
                throw CommandError("--transports: unknown transport \(name.debugDescription); the transports are \(known)", exitStatus: 2)
            }
            if !choices.contains(choice) { choices.append(choice) }
        }
        return choices
    }
}
