/// One lexical token of DQL text, with where it starts.
struct DQLToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A bare word: `cars`, `_id`, `SELECT`. Keywords are bare words (see `keyword`).
        case identifier(String)
        /// A backquoted name: `` `weird name` `` (a doubled backquote stands for one).
        case quotedIdentifier(String)
        /// A single-quoted string literal (`'it''s'`).
        case string(String)
        /// A double-quoted string: only an object key, never a value (that would be a trap for
        /// anyone used to JSON; the parser says so).
        case doubleQuotedString(String)
        /// The magnitude of an integer literal (the sign is a separate token).
        case integer(UInt64)
        /// A literal with a fraction or an exponent.
        case decimal(Double)
        /// `:name`, a named argument.
        case parameter(String)
        /// `$name`, a variable: only `$args` is defined.
        case variable(String)
        case symbol(DQLSymbol)
        case end
    }

    var kind: Kind
    var position: DQLSourcePosition
    /// The keyword this token spells, when it is a bare word that is one (any letter case).
    var keyword: DQLKeyword?

    /// How an error message names this token: `'FORM'`, `string 'abc'`, `end of input`.
    var quoted: String {
        switch kind {
        case .identifier(let name): return "'\(name)'"
        case .quotedIdentifier(let name): return "`\(name)`"
        case .string(let text): return "string '\(DQLToken.abbreviated(text))'"
        case .doubleQuotedString(let text): return "\"\(DQLToken.abbreviated(text))\""
        case .integer(let magnitude): return "number \(magnitude)"
        case .decimal(let value): return "number \(value)"
        case .parameter(let name): return "argument :\(name)"
        case .variable(let name): return "$\(name)"
        case .symbol(let symbol): return "'\(symbol.rawValue)'"
        case .end: return "end of input"
        }
    }

    private static func abbreviated(_ text: String) -> String {
        text.unicodeScalars.count <= 40 ? text : String(String.UnicodeScalarView(text.unicodeScalars.prefix(40))) + "…"
    }
}

/// Punctuation and operators.
enum DQLSymbol: String, Sendable, CaseIterable {
    case leftParen = "(", rightParen = ")", leftBracket = "[", rightBracket = "]"
    case leftBrace = "{", rightBrace = "}", comma = ",", dot = ".", semicolon = ";", colon = ":"
    case star = "*", plus = "+", minus = "-", slash = "/", percent = "%"
    case equal = "=", doubleEqual = "==", notEqual = "!=", lessGreater = "<>"
    case less = "<", lessEqual = "<=", greater = ">", greaterEqual = ">="
    case concatenate = "||", ampersands = "&&"
}

/// The words with a meaning in the grammar. Keywords are matched in any letter case; most of
/// them are still usable as field names where no keyword can stand (see `isReserved`).
enum DQLKeyword: String, Sendable, CaseIterable {
    case select = "SELECT", from = "FROM", `where` = "WHERE", order = "ORDER", by = "BY"
    case asc = "ASC", desc = "DESC", limit = "LIMIT", offset = "OFFSET", `as` = "AS"
    case and = "AND", or = "OR", not = "NOT", `in` = "IN", like = "LIKE", `is` = "IS"
    case null = "NULL", `true` = "TRUE", `false` = "FALSE", missing = "MISSING", between = "BETWEEN"
    case insert = "INSERT", into = "INTO", documents = "DOCUMENTS", initial = "INITIAL"
    case on = "ON", id = "ID", conflict = "CONFLICT", `do` = "DO", update = "UPDATE"
    case nothing = "NOTHING", fail = "FAIL", updateLocalDiff = "UPDATE_LOCAL_DIFF"
    case set = "SET", unset = "UNSET", apply = "APPLY", pnIncrement = "PN_INCREMENT"
    case delete = "DELETE", evict = "EVICT", create = "CREATE", drop = "DROP", index = "INDEX"
    case `if` = "IF", exists = "EXISTS", collection = "COLLECTION"
    case map = "MAP", register = "REGISTER", pnCounter = "PN_COUNTER", counter = "COUNTER"
    case attachment = "ATTACHMENT"
    case distinct = "DISTINCT", group = "GROUP", having = "HAVING"
    case explain = "EXPLAIN", profile = "PROFILE"
    case show = "SHOW", alter = "ALTER", system = "SYSTEM", reset = "RESET", all = "ALL", to = "TO"

    /// Keywords that cannot be a bare field name where an expression starts, because there they
    /// are operators, literals or the start of the next clause. Backquote them to use them as names.
    var isReserved: Bool {
        switch self {
        case .select, .from, .where, .order, .limit, .offset, .as, .and, .or, .not, .in, .like,
            .is, .between, .null, .true, .false:
            return true
        default:
            return false
        }
    }

    private static let byName: [String: DQLKeyword] = {
        var table: [String: DQLKeyword] = [:]
        for keyword in allCases { table[keyword.rawValue] = keyword }
        return table
    }()

    /// The keyword spelled by `bytes` in any ASCII letter case.
    static func lookup(_ bytes: ArraySlice<UInt8>) -> DQLKeyword? {
        guard bytes.count >= 2, bytes.count <= 17 else { return nil }
        var upper = [UInt8]()
        upper.reserveCapacity(bytes.count)
        for byte in bytes {
            guard byte < 0x80 else { return nil }
            upper.append(byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte)
        }
        return byName[String(decoding: upper, as: UTF8.self)]
    }
}
