import ArcusCRDT

extension Store {
    /// What this store may tell a peer it had seen of the document's events, for the peer's
    /// conflict view (see `FieldConflicts`): the state's version, lowered below every value this
    /// store keeps as a concurrent loser. Such a value is held against the field's winner, whose
    /// writer had not seen it; claiming it would tell the peer that the winner had.
    public func conflictKnowledge(of key: DocumentKey, in state: DocumentState) throws -> VersionVector {
        guard mayHoldConflicts else { return state.version }
        let earliest = try read { db in try FieldConflicts.earliestLosers(of: key, db) }
        var version = state.version
        for (site, time) in earliest {
            guard let claimed = version[site], claimed >= time else { continue }
            version = version.setting(site, to: time == .zero ? nil : Timestamp(rawValue: time.rawValue - 1))
        }
        return version
    }
}
