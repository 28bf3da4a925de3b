/// The delta-mutators. Each one computes, from the current state, the smallest delta that has
/// the mutation's effect, joins it into `self`, and returns it (nil when the mutation changes
/// nothing), so the caller can log and ship it: joined into any replica, the delta has the same
/// effect there.
///
/// Every removal a mutation makes (unsetting a field, replacing a map by a value, removing the
/// document) kills only what this replica can see; what others wrote concurrently survives.
extension DocumentState {
    /// Merges `fields` into the document, creating it when it is not live. Objects become maps
    /// (unless `hints` say otherwise) whose fields merge one by one; fields not named are left
    /// alone. A field named `excluded` is not written (a store keeps `_id` outside the CRDT).
    @discardableResult
    public mutating func upsert(
        _ fields: [String: Value],
        excluding excluded: String? = nil,
        strategy: WriteStrategy = .merge,
        at stamp: Stamp,
        hints: TypeHints = .objectsAreMaps
    ) -> DocumentState? {
        if strategy == .merge, cells.isEmpty, let delta = fastCreate(fields, excluding: excluded, stamp: stamp, hints: hints) {
            return delta
        }
        var fields = fields
        if let excluded, fields[excluded] != nil { fields[excluded] = nil }
        if strategy == .merge, let delta = fastWriteRegisters(fields.map { ([$0.key], $0.value) }, mergingObjects: true, stamp: stamp, hints: hints) {
            return delta
        }
        return generalUpsert(fields, strategy: strategy, at: stamp, hints: hints)
    }

    mutating func generalUpsert(_ fields: [String: Value], strategy: WriteStrategy, at stamp: Stamp, hints: TypeHints) -> DocumentState? {
        var context = MutationContext(stamp: WriteStamp(stamp), hints: hints)
        switch strategy {
        case .merge: break
        case .insertIfAbsent:
            if isLive { return nil }
        case .insertDefaultIfAbsent:
            if isLive { return nil }
            context.stamp = .defaultData(stamp)
        case .updateDifferentOnly:
            context.skipUnchanged = true
        }
        var delta = MapNode()
        if !isLive { delta.marker = Entry(context.stamp, .present) }
        for (name, value) in fields {
            if let change = context.write(value, over: slot(at: FieldPath([name])), at: FieldPath([name]), replacing: false) {
                delta.fields[name] = change
            }
        }
        return commit(delta, context)
    }

    /// Sets the field at `path` to `value`, replacing what was there whole. Missing or non-map
    /// intermediate fields become maps.
    @discardableResult
    public mutating func set(_ path: FieldPath, to value: Value, at stamp: Stamp, hints: TypeHints = .objectsAreMaps) -> DocumentState? {
        if !path.isRoot, let delta = fastWriteRegisters([(path.components, value)], mergingObjects: false, stamp: stamp, hints: hints) {
            return delta
        }
        return generalSet(path, to: value, at: stamp, hints: hints)
    }

    mutating func generalSet(_ path: FieldPath, to value: Value, at stamp: Stamp, hints: TypeHints) -> DocumentState? {
        let context = MutationContext(stamp: WriteStamp(stamp), hints: hints)
        return mutate(at: path, context) { current in
            context.write(value, over: current, at: path, replacing: true)
        }
    }

    /// Sets an ATTACHMENT field to `token`.
    @discardableResult
    public mutating func setAttachment(_ path: FieldPath, to token: AttachmentToken, at stamp: Stamp) -> DocumentState? {
        let context = MutationContext(stamp: WriteStamp(stamp), hints: .objectsAreMaps)
        return mutate(at: path, context) { current in
            context.writeRegister(.attachment(token), over: current)
        }
    }

    /// Removes the field at `path`; what other replicas write there concurrently survives.
    @discardableResult
    public mutating func unset(_ path: FieldPath, at stamp: Stamp) -> DocumentState? {
        guard !path.isRoot, let current = slot(at: path), let removal = current.removal(by: stamp) else { return nil }
        var delta = MapNode()
        delta.fields[path.components[0]] = Self.wrap(removal, in: path.components.dropFirst())
        return commit(delta, MutationContext(stamp: WriteStamp(stamp), hints: .objectsAreMaps))
    }

    /// Adds `amount` to the COUNTER at `path`. A field that holds anything else (or nothing) is
    /// replaced by a counter starting at zero.
    @discardableResult
    public mutating func increment(_ path: FieldPath, by amount: Number, at stamp: Stamp) -> DocumentState? {
        if let delta = fastIncrement(path, by: amount, at: stamp) { return delta }
        return generalIncrement(path, by: amount, at: stamp)
    }

    mutating func generalIncrement(_ path: FieldPath, by amount: Number, at stamp: Stamp) -> DocumentState? {
        let context = MutationContext(stamp: WriteStamp(stamp), hints: .objectsAreMaps)
        return mutate(at: path, context) { current in
            context.increment(current, by: amount, replacing: current?.visibleComponent?.component != .counter)
        }
    }

    /// Replaces the field at `path` by a COUNTER at zero, whatever it held.
    @discardableResult
    public mutating func replaceWithCounter(_ path: FieldPath, at stamp: Stamp) -> DocumentState? {
        let context = MutationContext(stamp: WriteStamp(stamp), hints: .objectsAreMaps)
        return mutate(at: path, context) { current in
            context.increment(current, by: .zero, replacing: true)
        }
    }

    /// Removes the document: a synced removal that keeps only causal metadata. A field written
    /// concurrently survives (and with it the document); a write made after the removal was seen
    /// creates the document anew without the removed fields.
    @discardableResult
    public mutating func remove(at stamp: Stamp) -> DocumentState? {
        guard let removal = root.removal(by: stamp) else { return nil }
        return commit(removal, MutationContext(stamp: WriteStamp(stamp), hints: .objectsAreMaps))
    }

    // MARK: - Building deltas

    private mutating func mutate(at path: FieldPath, _ context: MutationContext, leaf: (Slot?) -> Slot?) -> DocumentState? {
        precondition(!path.isRoot, "a field mutation needs a field path")
        var delta = MapNode()
        if !isLive { delta.marker = Entry(context.stamp, .present) }
        let first = path.components[0]
        if let change = context.descend(slot(at: FieldPath([first])), path.components.dropFirst(), leaf: leaf) {
            delta.fields[first] = change
        }
        return commit(delta, context)
    }

    private static func wrap(_ slot: Slot, in remaining: ArraySlice<String>) -> Slot {
        guard let name = remaining.first else { return slot }
        return Slot(map: MapNode(fields: [name: wrap(slot, in: remaining.dropFirst())]))
    }

    private mutating func commit(_ root: MapNode, _ context: MutationContext) -> DocumentState? {
        guard !root.isEmpty else { return nil }
        let delta = DocumentState(root: root, version: VersionVector(context.stamp.event))
        join(delta)
        return delta
    }
}

/// What one mutation writes with, and the recursive helpers that build its delta.
struct MutationContext {
    var stamp: WriteStamp
    var hints: TypeHints
    var skipUnchanged = false

    /// Default data never removes anything: it only fills in what nothing real has written.
    var removesOthers: Bool { stamp.order == stamp.event }
    var event: Stamp { stamp.event }

    /// Walks to the field at the end of `remaining`, making every step a live map, and applies
    /// `leaf` there.
    func descend(_ current: Slot?, _ remaining: ArraySlice<String>, leaf: (Slot?) -> Slot?) -> Slot? {
        guard let name = remaining.first else { return leaf(current) }
        var delta = ensureMap(current)
        if let change = descend(current?.map?.fields[name], remaining.dropFirst(), leaf: leaf) {
            if delta.map == nil { delta.map = MapNode() }
            delta.map!.fields[name] = change
        }
        return delta.isEmpty ? nil : delta
    }

    /// Makes the map component of `current` live (a marker when it is not) and removes the
    /// register and counter this replica sees there.
    func ensureMap(_ current: Slot?) -> Slot {
        var delta = Slot()
        if !(current?.map?.isLive ?? false) { delta.map = MapNode(marker: Entry(stamp, .present)) }
        if removesOthers, let current {
            if let r = current.register, !r.isRemoved { delta.register = r.removed(by: event) }
            if let c = current.counter, c.isLive { delta.counter = c.removal(by: event) }
        }
        return delta
    }

    /// Writes `value` over `current`: a map merge for map-typed objects, a register otherwise.
    /// With `replacing`, what the field held is removed first, so the value replaces it whole.
    func write(_ value: Value, over current: Slot?, at path: FieldPath, replacing: Bool) -> Slot? {
        guard hints.storesAsMap(value, at: path), case .object(let fields) = value else {
            if hints.type(at: path) == .counter, let amount = Number(value) {
                return increment(current, by: amount, replacing: true)
            }
            return writeRegister(.value(value), over: current)
        }
        var base = current ?? Slot()
        var delta = Slot()
        if replacing, removesOthers, let removal = base.removal(by: event) {
            delta = removal
            base.join(removal)
        }
        delta.join(ensureMap(base))
        for (name, child) in fields {
            if let change = write(child, over: base.map?.fields[name], at: path.appending(name), replacing: false) {
                if delta.map == nil { delta.map = MapNode() }
                if delta.map!.fields[name] == nil {
                    delta.map!.fields[name] = change
                } else {
                    delta.map!.fields[name]!.join(change)
                }
            }
        }
        return delta.isEmpty ? nil : delta
    }

    func writeRegister(_ payload: Entry.Payload, over current: Slot?) -> Slot? {
        if skipUnchanged, let current, current.visibleComponent?.component == .register,
            current.register?.payload == payload
        {
            return nil
        }
        var delta = Slot()
        if removesOthers, let current {
            if let m = current.map { delta.map = m.removal(by: event) }
            if let c = current.counter, c.isLive { delta.counter = c.removal(by: event) }
        }
        delta.register = Entry(stamp, payload)
        return delta
    }

    func increment(_ current: Slot?, by amount: Number, replacing: Bool) -> Slot? {
        var delta = Slot()
        if replacing, let current, let removal = current.removal(by: event) { delta = removal }
        let site = event.site
        let counter = current?.counter
        let own: Number
        switch (counter?.contributions[site], counter?.baselines[site]) {
        case let (c?, b?): own = c.stamp >= b.stamp ? c.total : b.total
        case let (c?, nil): own = c.total
        case let (nil, b?): own = b.total
        case (nil, nil): own = .zero
        }
        if delta.counter == nil { delta.counter = Counter() }
        delta.counter!.contributions[site] = Counter.Contribution(total: own + amount, stamp: event)
        return delta
    }
}
