import ArcusCRDT

/// `SHOW`, `SHOW ALL`, `SHOW name`, `ALTER SYSTEM SET name = value` and `ALTER SYSTEM RESET name |
/// ALL`: statements about the runtime settings of whoever runs the store (an agent's log level,
/// durability, transports), not about documents. The store parses them and hands them to the
/// settings its host registered (`Store.registerSettings`); it knows no setting itself.
public enum DQLSettingsStatement: Sendable, Hashable {
    /// Every setting (`name` nil) or one.
    case show(name: String?)
    /// `ALTER SYSTEM SET name = value`: `value` is a literal (a string, a number, true or false,
    /// or a bare word, taken as a string as in `SET log_level = debug`).
    case set(name: String, value: Value)
    /// `ALTER SYSTEM RESET name` (or every setting, `name` nil): back to the configuration's value.
    case reset(name: String?)

    /// The setting named, if one is.
    public var name: String? {
        switch self {
        case .show(let name), .reset(let name): return name
        case .set(let name, _): return name
        }
    }
}

extension DQLSettingsStatement: CustomStringConvertible {
    public var description: String {
        switch self {
        case .show(let name): return "SHOW " + (name.map(DQLSettingsStatement.quoted) ?? "ALL")
        case .set(let name, let value):
            var out = "ALTER SYSTEM SET \(Self.quoted(name)) = "
            DQLText.literal(value, to: &out)
            return out
        case .reset(let name): return "ALTER SYSTEM RESET " + (name.map(Self.quoted) ?? "ALL")
        }
    }

    /// A setting's name as the parser reads it back: dotted parts bare where they can be.
    static func quoted(_ name: String) -> String {
        name.split(separator: ".", omittingEmptySubsequences: false).map { part in
            // A bare ALL would be SHOW ALL, not the setting `all`.
            part.uppercased() == DQLKeyword.all.rawValue ? "`all`" : DQLPath.quotedName(String(part), first: true)
        }.joined(separator: ".")
    }
}
