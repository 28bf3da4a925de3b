import ArcusCloud
import Synchronization

/// What a handler received, in order, for tests to inspect from another thread.
final class ReceivedMessages: Sendable {
    private let messages = Mutex<[NATSMessage]>([])

    func append(_ message: NATSMessage) {
        messages.withLock { $0.append(message) }
    }

    var all: [NATSMessage] { messages.withLock { $0 } }
    var count: Int { messages.withLock { $0.count } }
}

/// Every event of a connection, collected by a task so that tests can wait for one.
final class RecordedEvents: Sendable {
    private let events = Mutex<[NATSConnectionEvent]>([])

    init(_ connection: NATSConnection) {
        let stream = connection.events
        Task { [self] in
            for await event in stream {
                record(event)
            }
        }
    }

    private func record(_ event: NATSConnectionEvent) {
        events.withLock { $0.append(event) }
    }

    var all: [NATSConnectionEvent] { events.withLock { $0 } }

    func count(of event: NATSConnectionEvent) -> Int {
        events.withLock { $0.filter { $0 == event }.count }
    }
}

/// A payload that carries its index in its first four bytes, followed by `size - 4` bytes of
/// a pattern that depends on the index.
func numberedPayload(_ index: Int, size: Int) -> [UInt8] {
    var payload = withUnsafeBytes(of: UInt32(index).bigEndian) { Array($0) }
    payload.reserveCapacity(max(size, 4))
    for offset in 0..<max(size - 4, 0) {
        payload.append(UInt8(truncatingIfNeeded: index &+ offset))
    }
    return payload
}

func payloadIndex(_ payload: [UInt8]) -> Int? {
    guard payload.count >= 4 else { return nil }
    return payload[0..<4].reduce(0) { $0 << 8 | Int($1) }
}

/// Options for tests: quick reconnects, so that outages end soon after the server is back.
func testOptions(_ url: String) -> NATSOptions {
    var options = NATSOptions(urls: [url])
    options.name = "arcus-test"
    options.reconnectWait = .milliseconds(100)
    return options
}
