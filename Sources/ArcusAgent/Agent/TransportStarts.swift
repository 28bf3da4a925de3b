import ArcusMesh
import Logging
import Synchronization

/// Which of the agent's transports started, and why the others did not: what the ready line,
/// `/v1/status` and `arcus status` show, and what makes `arcus agent` exit when none did. A
/// transport that cannot start (no Bluetooth in the kernel, a port taken) must say so where a
/// user looks, not only in the log.
final class TransportStarts: Sendable {
    /// How one transport's start ended: `failure` is nil when it started.
    struct Outcome: Sendable {
        let name: String
        let failure: String?
    }

    /// Each transport's name as `--transports` spells it (`ble`, `lan`…), in the agent's order.
    let names: [String]
    private let start = Mutex<Task<[Outcome], Never>?>(nil)
    private let ended = Mutex<[Outcome]?>(nil)

    init(names: [String]) { self.names = names }

    /// Starts every transport once, all at a time, and returns how each start ended; later
    /// calls wait for the first's outcome.
    func startOnce(_ transports: [any Transport], logger: Logger) async -> [Outcome] {
        let task = start.withLock { task in
            if let task { return task }
            let made = Task { [names] in
                let failures = await withTaskGroup(of: (Int, String?).self) { group in
                    for (index, transport) in transports.enumerated() {
                        group.addTask {
                            do {
                                try await transport.start()
                                logger.info("transport started", metadata: ["transport": "\(transport.kind.rawValue)", "endpoint": "\(transport.localEndpoint)"])
                                return (index, nil)
                            } catch {
                                logger.error("transport did not start", metadata: ["transport": "\(transport.kind.rawValue)", "error": "\(error)"])
                                return (index, "\(error)")
                            }
                        }
                    }
                    var failures = [String?](repeating: nil, count: transports.count)
                    for await (index, failure) in group { failures[index] = failure }
                    return failures
                }
                let outcomes = zip(names, failures).map { Outcome(name: $0, failure: $1) }
                self.ended.withLock { $0 = outcomes }
                return outcomes
            }
            task = made
            return made
        }
        return await task.value
    }

    /// Replaces the outcomes once `ALTER SYSTEM SET transports` changed which transports run.
    func record(_ outcomes: [Outcome]) {
        ended.withLock { $0 = outcomes }
    }

    /// The outcomes once every start has ended; nil before.
    var outcomes: [Outcome]? { ended.withLock { $0 } }

    /// The names of the transports that started, or, before the starts end, of every one asked for.
    var running: [String] { outcomes.map { $0.filter { $0.failure == nil }.map(\.name) } ?? names }

    /// The transports that did not start, each with why.
    var failed: [String: String] {
        Dictionary((outcomes ?? []).compactMap { outcome in outcome.failure.map { (outcome.name, $0) } }, uniquingKeysWith: { first, _ in first })
    }
}
