import ArcusCRDT

extension Store {
    /// What this store may tell the peer `site` it had seen of that peer's events in the
    /// document, for the peer's conflict view (see `FieldConflicts`): the state's version entry,
    /// lowered below every value of the peer's this store keeps as a concurrent loser. Such a
    /// value is held against the field's winner, whose writer had not seen it; claiming it would
    /// tell the peer that the winner had. Only the receiver's own entry may be lowered this way:
    /// a receiver never claims more of its own events than it holds, while any other entry
    /// lowered would claim less than the cells sent.
    ///
    /// Answered from memory (`ConflictIndex`): sync asks it for every document it serves.
    public func conflictKnowledge(of key: DocumentKey, in state: DocumentState, about site: SiteID) -> Timestamp? {
        guard let claimed = state.version[site] else { return nil }
        let kept = conflictIndex.losers(of: key)
        guard !kept.isEmpty, let earliest = FieldConflicts.earliestLosers(kept)[site], earliest <= claimed else { return claimed }
        return earliest == .zero ? nil : Timestamp(rawValue: earliest.rawValue - 1)
    }
}
