import ArcusCRDT

/// A document being changed inside an `update { doc in … }` closure:
///
///     doc["age"].set(32)
///     doc["owner"]["phone"].set("555")
///     doc["ownedCars"].counter?.increment(by: 1)
///     doc["note"].remove()
///
/// Each change is a CRDT mutation with its own stamp; all of them commit together. A change
/// that may not be made (to `_id`, too deep, NaN) is refused, and `update` then throws and
/// writes nothing.
public final class MutableDocument {
    public let id: Value
    var state: DocumentState
    var delta: DocumentState?
    /// The first change refused, thrown by `update` once the closure returns.
    private(set) var refusal: StoreError?
    private let stamp: () throws -> Stamp

    init(id: Value, state: DocumentState, stamp: @escaping () throws -> Stamp) {
        self.id = id
        self.state = state
        self.stamp = stamp
    }

    public subscript(name: String) -> MutableField { MutableField(document: self, path: FieldPath([name])) }

    /// The document as it now reads, `_id` included.
    public var value: Value { DocumentRows.visibleValue(state, id: id) ?? .object(["_id": id]) }

    func record(_ change: DocumentState?) {
        guard let change else { return }
        if delta == nil { delta = change } else { delta!.join(change) }
    }

    func nextStamp() throws -> Stamp { try stamp() }

    /// Runs `change` only if `check` passes; otherwise remembers why not.
    func attempt(_ check: () throws -> Void, _ change: () throws -> DocumentState?) {
        guard refusal == nil else { return }
        do {
            try check()
            record(try change())
        } catch {
            refusal = error as? StoreError ?? .invalidDocument("\(error)")
        }
    }
}

/// One field of a `MutableDocument`.
public struct MutableField {
    let document: MutableDocument
    public let path: FieldPath

    public subscript(name: String) -> MutableField { MutableField(document: document, path: path.appending(name)) }

    /// The field's current value, nil when absent.
    public var value: Value? { document.value[path: path] }

    /// Sets the field, replacing what it held. Objects become maps unless `as: .register`.
    public func set(_ value: Value, as type: FieldType? = nil) {
        let hints = type.map { TypeHints(fields: [path: $0]) } ?? .objectsAreMaps
        document.attempt({ try DocumentValidation.check(value, at: path) }) {
            document.state.set(path, to: value, at: try document.nextStamp(), hints: hints)
        }
    }

    public func set(_ token: AttachmentToken) {
        document.attempt({ try DocumentValidation.checkPath(path) }) {
            document.state.setAttachment(path, to: token, at: try document.nextStamp())
        }
    }

    public func remove() {
        document.attempt({ try DocumentValidation.checkPath(path) }) {
            document.state.unset(path, at: try document.nextStamp())
        }
    }

    /// The field as a counter, or nil when it holds something else.
    public var counter: MutableCounter? {
        guard document.state.slot(at: path)?.visibleComponent?.component == .counter else { return nil }
        return MutableCounter(field: self)
    }

    /// Replaces whatever the field holds by a counter at zero.
    @discardableResult
    public func replaceWithCounter() -> MutableCounter {
        document.attempt({ try DocumentValidation.checkPath(path) }) {
            document.state.replaceWithCounter(path, at: try document.nextStamp())
        }
        return MutableCounter(field: self)
    }
}

/// A COUNTER field: increments from every replica add up.
public struct MutableCounter {
    let field: MutableField

    public func increment(by amount: Int) { increment(by: .int(Int64(amount))) }

    public func increment(by amount: Double) { increment(by: .double(amount)) }

    func increment(by amount: Number) {
        let document = field.document
        document.attempt({
            if case .double(let d) = amount, !d.isFinite {
                throw StoreError.invalidDocument("cannot increment \(field.path) by \(d); use a finite number")
            }
        }) {
            document.state.increment(field.path, by: amount, at: try document.nextStamp())
        }
    }

    public var value: Number { field.document.state.slot(at: field.path)?.counter?.value ?? .zero }
}

extension WriteTransaction {
    /// Runs `body` on the document at `key` (created if absent); returns whether it changed.
    func update(_ key: DocumentKey, _ body: (MutableDocument) throws -> Void) throws -> Bool {
        let row = DocumentRows.RowID(key)
        let state = try load(row, toChange: true) ?? DocumentState()
        let wasLive = state.isLive, hadAttachments = !state.attachments.isEmpty
        let store = self.store
        let document = MutableDocument(id: key.id, state: state, stamp: { try store.stamp() })
        var changed = false
        defer { if !changed { store.stateCache.giveBack(state, of: key) } }
        try body(document)
        if let refusal = document.refusal { throw refusal }
        guard let delta = document.delta else { return false }
        changed = true
        try save(row, state: document.state, delta: delta, wasLive: wasLive, hadAttachments: hadAttachments, joinsDelta: true)
        return true
    }
}
