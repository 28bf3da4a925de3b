/// Rebuilds messages from the fragments of one link, in order, refusing any sequence that breaks
/// the format (see `FragmentHeader`). It holds at most one message, and never more than
/// `maximumMessageSize` bytes: a message's length is checked before any of it is buffered.
package struct FragmentReassembler {
    let maximumMessageSize: Int

    /// The length the message being rebuilt announced, or nil between messages.
    private var expectedLength: Int?
    private var partial: [UInt8] = []

    package init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// Takes the next fragment from the link; returns the message it completes, if any.
    package mutating func accept(_ fragment: [UInt8]) throws(FragmentationError) -> [UInt8]? {
        guard let headerByte = fragment.first else { throw .emptyFragment }
        let header = FragmentHeader(rawValue: headerByte)
        guard FragmentHeader.known.isSuperset(of: header) else { throw .unknownFlags(header: headerByte) }
        let payloadStart = FragmentHeader.size

        if header.contains(.first) {
            if let expectedLength { throw .interruptedMessage(expected: expectedLength, received: partial.count) }
            guard header.contains(.more) else {
                let length = fragment.count - payloadStart
                guard length <= maximumMessageSize else { throw .messageTooLarge(announced: length, limit: maximumMessageSize) }
                return Array(fragment[payloadStart...])
            }
            guard let (length, bytesStart) = LengthPrefix.read(from: fragment, at: payloadStart) else { throw .malformedLength }
            guard length <= maximumMessageSize else { throw .messageTooLarge(announced: length, limit: maximumMessageSize) }
            let received = fragment.count - bytesStart
            // A message that more fragments follow must have bytes left for them.
            guard received < length else { throw .lengthMismatch(expected: length, received: received) }
            expectedLength = length
            partial.reserveCapacity(length)
            partial += fragment[bytesStart...]
            return nil
        }

        guard let expectedLength else { throw .continuationWithoutStart }
        let received = partial.count + fragment.count - payloadStart
        if header.contains(.more) {
            guard fragment.count > payloadStart else { throw .emptyContinuation }
            guard received < expectedLength else { throw .lengthMismatch(expected: expectedLength, received: received) }
            partial += fragment[payloadStart...]
            return nil
        }
        guard received == expectedLength else { throw .lengthMismatch(expected: expectedLength, received: received) }
        partial += fragment[payloadStart...]
        self.expectedLength = nil
        let message = partial
        partial = []
        return message
    }
}
