/// The fragments of one message for a link of a given MTU, in the order they go on the link.
/// See `FragmentHeader` for the format.
package struct MessageFragments: Sequence {
    let message: [UInt8]
    let mtu: Int

    package init(_ message: [UInt8], mtu: Int) {
        precondition(mtu >= Self.minimumMTU(forMessagesUpTo: message.count), "an MTU of \(mtu) bytes cannot carry fragments")
        self.message = message
        self.mtu = mtu
    }

    /// The smallest MTU that carries every message of up to `maximumSize` bytes: a header, the
    /// longest length prefix and one byte of the message.
    package static func minimumMTU(forMessagesUpTo maximumSize: Int) -> Int {
        FragmentHeader.size + LengthPrefix.size(of: maximumSize) + 1
    }

    /// How many link messages the message takes.
    var fragmentCount: Int {
        let payload = mtu - FragmentHeader.size
        guard message.count > payload else { return 1 }
        let firstPayload = payload - LengthPrefix.size(of: message.count)
        let rest = message.count - firstPayload
        return 1 + (rest + payload - 1) / payload
    }

    package func makeIterator() -> Iterator { Iterator(message: message, mtu: mtu) }

    package struct Iterator: IteratorProtocol {
        private let message: [UInt8]
        private let mtu: Int
        private var offset = 0
        private var started = false

        init(message: [UInt8], mtu: Int) {
            self.message = message
            self.mtu = mtu
        }

        package mutating func next() -> [UInt8]? {
            var fragment: [UInt8] = []
            if !started {
                started = true
                let fitsWhole = message.count <= mtu - FragmentHeader.size
                fragment.reserveCapacity(fitsWhole ? FragmentHeader.size + message.count : mtu)
                if fitsWhole {
                    fragment.append(FragmentHeader.first.rawValue)
                    fragment += message
                    offset = message.count
                    return fragment
                }
                fragment.append(FragmentHeader([.first, .more]).rawValue)
                LengthPrefix.append(message.count, to: &fragment)
            } else {
                guard offset < message.count else { return nil }
                let remaining = message.count - offset
                let last = remaining <= mtu - FragmentHeader.size
                fragment.reserveCapacity(last ? FragmentHeader.size + remaining : mtu)
                fragment.append((last ? [] : FragmentHeader.more).rawValue)
            }
            let end = Swift.min(message.count, offset + mtu - fragment.count)
            fragment += message[offset..<end]
            offset = end
            return fragment
        }
    }
}
