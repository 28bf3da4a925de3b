/// A place in DQL source text.
///
/// `line` and `column` are 1-based; the column counts Unicode scalars from the start of the line
/// (a tab counts as one). `offset` is the UTF-8 byte offset from the start of the text.
public struct DQLSourcePosition: Sendable, Hashable, CustomStringConvertible {
    public var offset: Int
    public var line: Int
    public var column: Int

    public init(offset: Int, line: Int, column: Int) {
        self.offset = offset
        self.line = line
        self.column = column
    }

    public static let start = DQLSourcePosition(offset: 0, line: 1, column: 1)

    public var description: String { "line \(line), column \(column)" }
}

/// Why a DQL statement could not be parsed, bound to its arguments, or evaluated.
///
/// Every error names the line and column it refers to: for a syntax error the token that could
/// not be read, for an argument or document error the expression that referenced it.
/// `description` reads `line 1, column 23: expected FROM after the projection, found 'FORM'`.
public struct DQLError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// A token that does not fit the grammar where it stands.
        case syntax
        /// The text does not start with a statement keyword.
        case unknownStatement
        /// A character that cannot start any token.
        case invalidCharacter
        /// A string, quoted identifier or comment without its closing delimiter.
        case unterminated
        /// A malformed or out-of-range number literal.
        case invalidNumber
        /// Parentheses, literals or operators nested deeper than the parser allows.
        case nestingTooDeep
        case unknownFunction
        case wrongArity
        /// A clause that contradicts another (duplicate names, conflicting assignments, …).
        case invalidStatement
        /// A referenced argument is not in the arguments object.
        case missingArgument
        /// An argument has a value the statement cannot use (e.g. a negative LIMIT).
        case invalidArgument
        /// An INSERT document is not an object, has a bad `_id` or nests too deeply.
        case invalidDocument
    }

    public var kind: Kind
    public var message: String
    public var line: Int
    public var column: Int

    public init(_ kind: Kind, _ message: String, at position: DQLSourcePosition) {
        self.kind = kind
        self.message = message
        self.line = position.line
        self.column = position.column
    }

    public var description: String { "line \(line), column \(column): \(message)" }
}
