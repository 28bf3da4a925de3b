extension DocumentState {
    /// The document as readers see it, as compact JSON with keys in sorted order, `extra` (such
    /// as the `_id`) added at the root; nil when the document is not live. The same text as
    /// `value` with `extra` added, then `jsonString`, without building the value first.
    public func visibleJSON(adding extra: (name: String, value: Value)? = nil) -> String? {
        var writer = JSONWriter(capacity: 64 + 24 * cells.count)
        // Written first and dropped if the document turns out not live: one walk, not two.
        guard writeVisibleMap(cells.indices, adding: extra, to: &writer) != nil else { return nil }
        return writer.text
    }

    /// Whether `visibleJSON` has a document to write (its root map is live), without writing it.
    public var hasVisibleValue: Bool { mapOrder(cells.indices) != nil }

    /// Writes the map in `range`; returns its latest live stamp (nil: the map is not live).
    @discardableResult
    private func writeVisibleMap(_ range: Range<Int>, adding extra: (name: String, value: Value)?, to writer: inout JSONWriter) -> Stamp? {
        writer.append(byte: UInt8(ascii: "{"))
        var first = true
        var extra = extra
        func writeName(_ name: String) {
            if !first { writer.append(byte: UInt8(ascii: ",")) }
            first = false
            writer.write(name)
            writer.append(byte: UInt8(ascii: ":"))
        }
        let latest = forEachVisibleField(in: range) { span, visible in
            let name = names[Int(cells[span.field].index)]
            if let pending = extra, pending.name <= name {
                writeName(pending.name)
                writer.write(pending.value)
                extra = nil
                if pending.name == name { return }  // `extra` takes the field's place
            }
            writeName(name)
            switch visible {
            case .map(let nested): writeVisibleMap(nested, adding: nil, to: &writer)
            case .counter(let sum): writer.write(sum.value)
            case .register: writer.write(value(of: visible))
            }
        }
        if let pending = extra {
            writeName(pending.name)
            writer.write(pending.value)
        }
        writer.append(byte: UInt8(ascii: "}"))
        return latest
    }
}
