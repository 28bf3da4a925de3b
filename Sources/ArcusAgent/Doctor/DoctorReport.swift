import ArcusCRDT

/// How `arcus doctor` prints its checks: a table with each fix under its check, and a verdict;
/// or one JSON object.
public enum DoctorReport {
    public static func table(_ checks: [DoctorCheck]) -> String {
        let areaWidth = max(4, checks.map(\.area.count).max() ?? 0)
        let nameWidth = max(5, checks.map(\.name.count).max() ?? 0)
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        var lines = [pad("AREA", areaWidth) + "  " + pad("CHECK", nameWidth) + "  " + pad("STATUS", 7) + "  DETAIL"]
        for check in checks {
            lines.append(pad(check.area, areaWidth) + "  " + pad(check.name, nameWidth) + "  " + pad(check.status.rawValue, 7) + "  " + check.detail)
            if let fix = check.fix, check.status != .ok {
                lines.append(String(repeating: " ", count: areaWidth + nameWidth + 13) + "fix: " + fix)
            }
        }
        lines.append("")
        lines.append(verdict(checks))
        return lines.joined(separator: "\n")
    }

    public static func json(_ checks: [DoctorCheck]) -> String {
        Value.object(["ok": .bool(Doctor.passes(checks)), "checks": .array(checks.map(\.json))]).jsonString
    }

    static func verdict(_ checks: [DoctorCheck]) -> String {
        let failures = checks.filter { $0.status == .failure }.count
        let warnings = checks.filter { $0.status == .warning }.count
        if failures > 0 { return "\(failures == 1 ? "One problem stands" : "\(failures) problems stand") in the way of what the configuration asks for; see the fixes above." }
        if warnings > 0 { return "The agent can run; \(warnings) warning\(warnings == 1 ? "" : "s") above." }
        return "The agent can run with this configuration."
    }
}
