import ArcusCRDT
import Synchronization

extension Store {
    /// Documents held back from readers: the sync engine evicted them while a subscription
    /// matched them, and has not got them back whole. Their rows keep what arrives meanwhile
    /// (a peer's change to one field, say) but show nothing: a reader would see a document with
    /// some of its fields, and a write to it would act on that part only — a delete would leave
    /// the fields it never saw to come back on every other peer. The engine sets the whole set
    /// whenever it changes, and relogs a document it releases, so that readers and observers
    /// see it again at once.
    public func withhold(_ keys: Set<DocumentKey>) {
        withheldKeys.withLock { $0 = keys }
    }

    /// The documents `withhold` holds back now.
    public var withheldDocuments: Set<DocumentKey> { withheldKeys.withLock { $0 } }

    func isWithheld(_ key: DocumentKey) -> Bool {
        withheldKeys.withLock { !$0.isEmpty && $0.contains(key) }
    }
}
