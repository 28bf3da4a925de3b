/// The registers of a state by field path: what a store needs to see which last-writer-wins
/// resolutions a merge made (the conflict view) and which fields a local write touched.
extension DocumentState {
    /// Calls `body` with every register of the state and the path of its field, in pre-order.
    public func forEachRegister(_ body: (FieldPath, Entry) -> Void) {
        forEachFieldComponent { path, i in
            if cells[i].kind == .register { body(FieldPath(path), entry(cells[i])) }
        }
    }

    /// The register of the field at `path`, if it has one; cheaper than `slot(at:)`, which
    /// builds the field's whole nested view.
    public func register(at path: FieldPath) -> Entry? {
        var range = cells.indices
        var depth: UInt8 = 0
        for (step, name) in path.components.enumerated() {
            guard let span = field(named: name, in: range, depth: depth) else { return nil }
            if step == path.components.count - 1 { return span.register.map { entry(cells[$0]) } }
            range = span.nested
            depth += 1
        }
        return nil
    }

    /// The paths of the fields whose register or counter this state (a delta) writes or removes,
    /// each once, in pre-order. Map markers do not count: writing into a map is not writing it.
    public var writtenFieldPaths: [FieldPath] {
        var paths: [FieldPath] = []
        forEachFieldComponent { path, _ in
            if paths.last?.components != path { paths.append(FieldPath(path)) }
        }
        return paths
    }

    /// Calls `body` with each register, contribution and baseline cell's index and the path of
    /// the field it belongs to.
    private func forEachFieldComponent(_ body: ([String], Int) -> Void) {
        var path: [String] = []
        for i in cells.indices {
            let cell = cells[i]
            let depth = Int(cell.depth)
            switch cell.kind {
            case .field:
                if path.count > depth { path.removeLast(path.count - depth) }
                path.append(names[Int(cell.index)])
            case .marker:
                continue
            case .register, .contribution, .baseline:
                // A field's components follow its field cell at the same depth.
                if path.count > depth + 1 { path.removeLast(path.count - depth - 1) }
                body(path, i)
            }
        }
    }
}
