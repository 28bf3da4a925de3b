import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Synchronization
import Testing

/// Sessions call the store synchronously, and a commit can wait a long time (SQLite's writer,
/// fsync under `durability = full`). Found on 2 cores in the 16-host network bed: an agent
/// restarted into the mesh caught up with 15 peers at once, its sessions' commits held every
/// thread of Swift's cooperative pool, and no new link's hello was read for half a minute.
@Suite("A session waiting on its store leaves the rest of the process running")
struct BlockedStoreTests {
    /// Holds every commit until a task of the cooperative pool opens it, which it can only do
    /// while the pool has a thread the commits do not hold.
    final class Gate: Sendable {
        struct State {
            var waiting = 0
            var isOpen = false
            var timedOut = false
        }
        let state = Mutex(State())
        /// Commits that must be waiting at once before the opener starts: one per thread of the pool.
        let poolWidth: Int

        init(poolWidth: Int) { self.poolWidth = poolWidth }

        func hold() {
            let waiting = state.withLock { state -> Int in
                state.waiting += 1
                return state.waiting
            }
            if waiting == poolWidth {
                Task.detached { self.state.withLock { $0.isOpen = true } }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while !state.withLock({ $0.isOpen }), ContinuousClock.now < deadline { usleep(1000) }
            state.withLock { state in
                if !state.isOpen { state.timedOut = true }
                state.waiting -= 1
            }
        }
    }

    @Test("commits held by the store do not hold the threads every other task needs")
    func commitsWaitingOffThePool() async throws {
        // The pool has a thread per core; counted generously, so that without their own
        // threads the sessions below would surely take them all.
        let poolWidth = max(ProcessInfo.processInfo.activeProcessorCount, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let gate = Gate(poolWidth: poolWidth)
        let server = try Peer("server")
        _ = try server.subscribe("SELECT * FROM docs")
        _ = try server.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'd', 'v': 1})")
        var devices: [Peer] = [], hooks: [ChangeListener] = [], connections: [Connection] = []
        for i in 0..<(poolWidth + 2) {
            let device = try Peer("device \(i)")
            _ = try device.subscribe("SELECT * FROM docs")
            hooks.append(device.store.addCommitHook { _, _ in gate.hold() })
            devices.append(device)
        }
        for device in devices { connections.append(connect(device, server)) }
        for device in devices {
            #expect(try await eventually { try ids(device.store, "docs") == ["d"] })
        }
        let state = gate.state.withLock { $0 }
        #expect(state.isOpen, "the commits never waited \(poolWidth) at once")
        #expect(!state.timedOut, "with \(poolWidth) commits waiting, no other task ran for 10 s")
        for connection in connections {
            connection.close()
            await connection.ended()
        }
        for peer in devices + [server] { peer.engine.stop() }
        _ = hooks
    }
}
