import ArcusCRDT

extension DQLParserState {
    /// `SHOW [ALL | name]`.
    mutating func show() throws(DQLError) -> DQLSettingsStatement {
        advance()
        expectedNext = "the end of the statement (SHOW shows one setting or ALL)"
        if current.kind == .end || at(.semicolon) || accept(.all) { return .show(name: nil) }
        return .show(name: try settingName("a setting's name or ALL after SHOW"))
    }

    /// `ALTER SYSTEM SET name = value`, `ALTER SYSTEM RESET name | ALL`.
    mutating func alterSystem() throws(DQLError) -> DQLSettingsStatement {
        advance()
        try expect(.system, "after ALTER (ALTER SYSTEM SET name = value, or ALTER SYSTEM RESET name)")
        if accept(.set) {
            let name = try settingName("a setting's name after ALTER SYSTEM SET")
            guard accept(.equal) || accept(.to) else { throw fail("'=' or TO after the setting's name") }
            return .set(name: name, value: try settingValue())
        }
        if accept(.reset) {
            if accept(.all) { return .reset(name: nil) }
            return .reset(name: try settingName("a setting's name or ALL after ALTER SYSTEM RESET"))
        }
        throw fail("SET or RESET after ALTER SYSTEM")
    }

    /// A name, dotted parts allowed (`transport.lan`), keywords too: no expression follows it.
    private mutating func settingName(_ expected: String) throws(DQLError) -> String {
        if at(.all) || current.kind == .end { throw fail(expected) }
        var parts = [try anyName(expected)]
        while accept(.dot) { parts.append(try anyName("a name after '.' in the setting's name")) }
        return parts.joined(separator: ".")
    }

    /// A literal: a string, a number (with its sign), true, false, or a bare word (a string).
    private mutating func settingValue() throws(DQLError) -> Value {
        let expected = "a value (a string, a number, true or false) after '='"
        let token = current
        var negative = false
        if accept(.minus) { negative = true } else { _ = accept(.plus) }
        let number = current
        switch number.kind {
        case .integer(let magnitude):
            advance()
            guard magnitude <= UInt64(Int64.max) else {
                throw DQLError(.invalidNumber, "\(magnitude) is too large for a setting", at: number.position)
            }
            return .int(negative ? -Int64(magnitude) : Int64(magnitude))
        case .decimal(let value):
            advance()
            return .double(negative ? -value : value)
        default:
            if negative || token.kind != number.kind { throw fail("a number after the sign") }
        }
        switch token.kind {
        case .string(let text), .doubleQuotedString(let text):
            advance()
            return .string(text)
        case .identifier(let word):
            advance()
            switch token.keyword {
            case .true?: return .bool(true)
            case .false?: return .bool(false)
            default: return .string(word)
            }
        default:
            throw fail(expected)
        }
    }
}
