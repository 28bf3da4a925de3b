import ArcusLAN

/// Every event an `AvahiService` reports, kept so that a test can wait for the one it expects.
actor EventLog {
    private(set) var events: [DiscoveryEvent] = []
    private var streamFinished = false

    init(of service: AvahiService) {
        let stream = service.events
        Task {
            for await event in stream { await self.append(event) }
            await self.markFinished()
        }
    }

    private func markFinished() {
        streamFinished = true
    }

    private func append(_ event: DiscoveryEvent) {
        events.append(event)
    }

    /// Waits until an event matches, and returns what `match` made of it. The limit is far above
    /// what discovery takes (under 2 s on loopback); it only stops a broken test from hanging.
    /// Only events from index `start` on count, to wait for what happens after some point.
    func first<T: Sendable>(
        within limit: Duration = .seconds(60),
        from start: Int = 0,
        _ what: String,
        _ match: @Sendable (DiscoveryEvent) -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + limit
        while true {
            if let found = events.dropFirst(start).lazy.compactMap(match).first { return found }
            guard ContinuousClock.now < deadline else { throw TimedOut(what: what, events: events) }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits for the stream to finish (after `stop()`), so that `events` is the whole story.
    func finished(within limit: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + limit
        while !streamFinished {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "the end of the events", events: events) }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var events: [DiscoveryEvent]
    var description: String { "timed out waiting for \(what); events so far: \(events)" }
}

extension DiscoveryEvent {
    var published: String? {
        if case .published(let name) = self { name } else { nil }
    }

    var found: DiscoveredService? {
        if case .found(let service) = self { service } else { nil }
    }

    var lost: String? {
        if case .lost(let name) = self { name } else { nil }
    }

    var ignored: (name: String, reason: String)? {
        if case .ignored(let name, let reason) = self { (name, reason) } else { nil }
    }

    var warning: String? {
        if case .warning(let text) = self { text } else { nil }
    }
}
