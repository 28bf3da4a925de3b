import Synchronization

/// The receiving half of a `MessageChannel`. It reads fragments from the link only when its
/// consumer asks for the next message, so a slow consumer slows the sender down through the
/// link's backpressure instead of filling memory here.
actor IncomingMessages {
    /// Set when the peer's fragments broke the format and the link was closed because of it.
    nonisolated let violation = Mutex<FragmentationError?>(nil)

    private let link: any Link
    private var fragments: AsyncStream<[UInt8]>.Iterator
    private var reassembler: FragmentReassembler
    private var isFinished = false

    init(link: any Link, maximumMessageSize: Int) {
        self.link = link
        self.fragments = link.incoming.makeAsyncIterator()
        self.reassembler = FragmentReassembler(maximumMessageSize: maximumMessageSize)
    }

    /// The next whole message, or nil once the link has closed (a message cut short by the close
    /// is dropped) or the peer broke the format.
    func next() async -> [UInt8]? {
        guard !isFinished else { return nil }
        // An actor cannot await a mutating method of its own property; the iterator is a handle
        // on the stream's shared state, so a copy that is put back afterwards is the same iterator.
        var fragments = self.fragments
        defer { self.fragments = fragments }
        while let fragment = await fragments.next(isolation: self) {
            do throws(FragmentationError) {
                if let message = try reassembler.accept(fragment) { return message }
            } catch {
                violation.withLock { $0 = error }
                isFinished = true
                link.close()
                return nil
            }
        }
        isFinished = true
        return nil
    }
}
