/// Turns DQL text into tokens.
///
/// Works on the UTF-8 bytes in one forward pass, never recurses and never traps on any input:
/// each malformed token becomes a `DQLError` naming its line and column. Whitespace, `-- line`
/// comments and `/* block */` comments separate tokens.
struct DQLLexer {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var column = 1

    init(_ text: String) { bytes = Array(text.utf8) }

    /// All the tokens of `text`, the last one `.end`.
    static func tokenize(_ text: String) throws(DQLError) -> [DQLToken] {
        var lexer = DQLLexer(text)
        var tokens: [DQLToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private var position: DQLSourcePosition { DQLSourcePosition(offset: index, line: line, column: column) }

    private func peek(_ ahead: Int = 0) -> UInt8? {
        let i = index + ahead
        return i < bytes.count ? bytes[i] : nil
    }

    /// Moves past one byte, keeping line and column (columns count scalars, so continuation
    /// bytes do not advance them).
    private mutating func advance() {
        guard index < bytes.count else { return }
        let byte = bytes[index]
        index += 1
        if byte == 0x0A {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    private mutating func advance(_ count: Int) { for _ in 0..<count { advance() } }

    mutating func next() throws(DQLError) -> DQLToken {
        try skipTrivia()
        let start = position
        guard let byte = peek() else { return DQLToken(kind: .end, position: start) }
        switch byte {
        case UInt8(ascii: "'"):
            return DQLToken(kind: .string(try quoted(by: byte, what: "string")), position: start)
        case UInt8(ascii: "\""):
            return DQLToken(kind: .doubleQuotedString(try quoted(by: byte, what: "string")), position: start)
        case UInt8(ascii: "`"):
            let name = try quoted(by: byte, what: "quoted name")
            guard !name.isEmpty else { throw DQLError(.syntax, "a quoted name cannot be empty", at: start) }
            return DQLToken(kind: .quotedIdentifier(name), position: start)
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number(start)
        case UInt8(ascii: ":"), UInt8(ascii: "$"):
            // `:name` is an argument and `$name` a variable only when a name follows at once;
            // a lone `:` separates an object key from its value.
            if let length = identifierStartLength(at: index + 1) {
                advance()
                let name = word(firstLength: length)
                let kind: DQLToken.Kind = byte == UInt8(ascii: ":") ? .parameter(name) : .variable(name)
                return DQLToken(kind: kind, position: start)
            }
            if byte == UInt8(ascii: ":") {
                advance()
                return DQLToken(kind: .symbol(.colon), position: start)
            }
            throw DQLError(.invalidCharacter, "expected a name after '$' (as in $args.name)", at: start)
        default:
            if let length = identifierStartLength(at: index) {
                let wordStart = index
                let name = word(firstLength: length)
                let keyword = DQLKeyword.lookup(bytes[wordStart..<index])
                return DQLToken(kind: .identifier(name), position: start, keyword: keyword)
            }
            if let symbol = symbol() {
                advance(symbol.rawValue.utf8.count)
                return DQLToken(kind: .symbol(symbol), position: start)
            }
            throw invalidCharacter(at: start)
        }
    }

    // MARK: - Trivia

    private mutating func skipTrivia() throws(DQLError) {
        while let byte = peek() {
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0C:
                advance()
            case UInt8(ascii: "-") where peek(1) == UInt8(ascii: "-"):
                while let b = peek(), b != 0x0A { advance() }
            case UInt8(ascii: "/") where peek(1) == UInt8(ascii: "*"):
                let start = position
                advance(2)
                while true {
                    guard let b = peek() else {
                        throw DQLError(.unterminated, "unterminated comment: no closing */ for the comment that starts here", at: start)
                    }
                    if b == UInt8(ascii: "*"), peek(1) == UInt8(ascii: "/") {
                        advance(2)
                        break
                    }
                    advance()
                }
            default:
                return
            }
        }
    }

    // MARK: - Words

    /// The byte length of the scalar at `i` when it can start a name: an ASCII letter, `_`, or a
    /// non-ASCII letter.
    private func identifierStartLength(at i: Int) -> Int? {
        guard i < bytes.count else { return nil }
        let b = bytes[i]
        if b < 0x80 { return isASCIILetter(b) || b == UInt8(ascii: "_") ? 1 : nil }
        guard let (scalar, length) = scalar(at: i), scalar.properties.isAlphabetic else { return nil }
        return length
    }

    private func identifierPartLength(at i: Int) -> Int? {
        guard i < bytes.count else { return nil }
        let b = bytes[i]
        if b < 0x80 { return isASCIILetter(b) || isDigit(b) || b == UInt8(ascii: "_") ? 1 : nil }
        guard let (scalar, length) = scalar(at: i),
            scalar.properties.isAlphabetic || scalar.properties.numericType != nil
        else { return nil }
        return length
    }

    private mutating func word(firstLength: Int) -> String {
        let start = index
        advance(firstLength)
        while let length = identifierPartLength(at: index) { advance(length) }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// Decodes the scalar at `i`. The text came from a `String`, so it is valid UTF-8; the
    /// checks keep a bad byte from trapping anyway.
    private func scalar(at i: Int) -> (Unicode.Scalar, Int)? {
        let b0 = bytes[i]
        if b0 < 0x80 { return (Unicode.Scalar(b0), 1) }
        let length = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0
        guard length > 0, i + length <= bytes.count else { return nil }
        var value = UInt32(b0) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
        for k in 1..<length { value = value << 6 | UInt32(bytes[i + k] & 0x3F) }
        guard let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }

    private func isASCIILetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
    private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    // MARK: - Quoted text

    /// Reads text between two `quote` bytes; a doubled quote inside stands for one.
    private mutating func quoted(by quote: UInt8, what: String) throws(DQLError) -> String {
        let start = position
        advance()
        var text: [UInt8] = []
        while true {
            guard let b = peek() else {
                let q = String(decoding: [quote], as: UTF8.self)
                throw DQLError(.unterminated, "unterminated \(what): no closing \(q) for the \(what) that starts here", at: start)
            }
            advance()
            if b == quote {
                guard peek() == quote else { break }
                advance()
            }
            text.append(b)
        }
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: - Numbers

    /// `digits [. digits] [e [+-] digits]`. A number that runs into letters (`12abc`) or has an
    /// exponent without digits is an error rather than two tokens.
    private mutating func number(_ start: DQLSourcePosition) throws(DQLError) -> DQLToken {
        let from = index
        var isInteger = true
        while let b = peek(), isDigit(b) { advance() }
        if peek() == UInt8(ascii: "."), let b = peek(1), isDigit(b) {
            isInteger = false
            advance()
            while let b = peek(), isDigit(b) { advance() }
        }
        if let e = peek(), e | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            advance()
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { advance() }
            guard let b = peek(), isDigit(b) else {
                throw DQLError(.invalidNumber, "invalid number '\(text(from))': the exponent has no digits", at: start)
            }
            while let b = peek(), isDigit(b) { advance() }
        }
        if identifierPartLength(at: index) != nil {
            while let length = identifierPartLength(at: index) { advance(length) }
            throw DQLError(.invalidNumber, "invalid number '\(text(from))'", at: start)
        }
        let literal = text(from)
        if isInteger {
            var magnitude: UInt64 = 0
            for b in bytes[from..<index] {
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(b - 0x30))
                guard !o1, !o2 else {
                    throw DQLError(.invalidNumber, "integer \(literal) does not fit in 64 bits", at: start)
                }
                magnitude = sum
            }
            return DQLToken(kind: .integer(magnitude), position: start)
        }
        guard let value = Double(literal), value.isFinite else {
            throw DQLError(.invalidNumber, "number \(literal) is out of range", at: start)
        }
        return DQLToken(kind: .decimal(value), position: start)
    }

    private func text(_ from: Int) -> String { String(decoding: bytes[from..<index], as: UTF8.self) }

    // MARK: - Symbols

    private func symbol() -> DQLSymbol? {
        guard let b = peek() else { return nil }
        let next = peek(1)
        switch b {
        case UInt8(ascii: "("): return .leftParen
        case UInt8(ascii: ")"): return .rightParen
        case UInt8(ascii: "["): return .leftBracket
        case UInt8(ascii: "]"): return .rightBracket
        case UInt8(ascii: "{"): return .leftBrace
        case UInt8(ascii: "}"): return .rightBrace
        case UInt8(ascii: ","): return .comma
        case UInt8(ascii: "."): return .dot
        case UInt8(ascii: ";"): return .semicolon
        case UInt8(ascii: "*"): return .star
        case UInt8(ascii: "+"): return .plus
        case UInt8(ascii: "-"): return .minus
        case UInt8(ascii: "/"): return .slash
        case UInt8(ascii: "%"): return .percent
        case UInt8(ascii: "="): return next == UInt8(ascii: "=") ? .doubleEqual : .equal
        case UInt8(ascii: "!"): return next == UInt8(ascii: "=") ? .notEqual : nil
        case UInt8(ascii: "<"):
            if next == UInt8(ascii: "=") { return .lessEqual }
            return next == UInt8(ascii: ">") ? .lessGreater : .less
        case UInt8(ascii: ">"): return next == UInt8(ascii: "=") ? .greaterEqual : .greater
        case UInt8(ascii: "|"): return next == UInt8(ascii: "|") ? .concatenate : nil
        case UInt8(ascii: "&"): return next == UInt8(ascii: "&") ? .ampersands : nil
        default: return nil
        }
    }

    private func invalidCharacter(at start: DQLSourcePosition) -> DQLError {
        let shown: String
        if let (scalar, _) = scalar(at: index) {
            shown = scalar.value < 0x20 || scalar.value == 0x7F
                ? "U+" + String(scalar.value, radix: 16, uppercase: true) : String(Character(scalar))
        } else {
            shown = "byte 0x" + String(bytes[index], radix: 16)
        }
        var hint = ""
        switch peek() {
        case UInt8(ascii: "!"): hint = "; use NOT or !="
        case UInt8(ascii: "|"): hint = "; use OR, or || to join strings"
        case UInt8(ascii: "&"): hint = "; use AND"
        default: if peek() ?? 0 >= 0x80 { hint = "; put names with such characters in backquotes" }
        }
        return DQLError(.invalidCharacter, "unexpected character '\(shown)'\(hint)", at: start)
    }
}
