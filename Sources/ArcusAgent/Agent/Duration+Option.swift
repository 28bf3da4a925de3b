import Foundation

extension Duration {
    /// Reads a duration given to `option` (`--clock-skew-allowance`): a whole number and a unit,
    /// `s`, `m`, `h` or `d` (`600s`, `90m`, `36h`, `7d`), at most `limit`. The error names the
    /// option and says what it takes.
    init(parsing text: String, option: String, limit: Duration) throws(CommandError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = trimmed.last, let seconds = units[unit], let count = Int64(trimmed.dropLast()), count >= 0,
              case let (total, overflow) = count.multipliedReportingOverflow(by: seconds), !overflow, .seconds(total) <= limit
        else {
            throw CommandError(
                "\(option) \(text.debugDescription) is not a duration from 0s to \(Self.describe(limit)): give a whole number and a unit, s, m, h or d (such as 7d or 36h)",
                exitStatus: 2)
        }
        self = .seconds(total)
    }

    /// Whole days, hours, minutes or seconds, as `init(parsing:)` reads them.
    static func describe(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where seconds != 0 && seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}
