import Foundation
import Testing
@testable import ArcusLAN

/// Agents finding each other through the real avahi-daemon, on loopback. Serialized: every test
/// shares the daemon and its cache, and waits are easier to read one test at a time.
@Suite(.serialized, .enabled(if: AvahiDaemon.answers || AvahiDaemon.required, "no avahi-daemon (CI=true makes this a failure)"))
struct AvahiDiscoveryTests {
    /// A name no earlier run left in the daemon's cache.
    static func uniqueName(_ role: String) -> String {
        "arcus-test-\(role)-\(UInt32.random(in: 0...UInt32.max))"
    }

    static func record() -> ServiceTXT {
        let peer = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        return ServiceTXT(peer: peer, meshHash: "0123456789abcdef", protocolVersion: 1)
    }

    func startedService(_ advertisement: Advertisement) throws -> (AvahiService, EventLog) {
        try #require(AvahiDaemon.answers, Comment(rawValue: AvahiDaemon.missing))
        let service = AvahiService(interface: AvahiDaemon.loopback)
        let log = EventLog(of: service)
        try service.start(advertising: advertisement)
        return (service, log)
    }

    @Test func twoAgentsFindEachOtherWithPortAndTXT() async throws {
        let first = Advertisement(name: Self.uniqueName("first"), port: 7001, txt: Self.record())
        let second = Advertisement(name: Self.uniqueName("second"), port: 7002, txt: Self.record())
        let (firstService, firstLog) = try startedService(first)
        let (secondService, secondLog) = try startedService(second)
        defer { firstService.stop(); secondService.stop() }

        let seenByFirst = try await firstLog.first("\(second.name) found") { $0.found?.name == second.name ? $0.found : nil }
        let seenBySecond = try await secondLog.first("\(first.name) found") { $0.found?.name == first.name ? $0.found : nil }

        #expect(seenByFirst.port == 7002)
        #expect(seenByFirst.txt.entries == second.txtEntries)
        #expect(seenByFirst.address == "127.0.0.1")
        #expect(seenBySecond.port == 7001)
        #expect(seenBySecond.txt.entries == first.txtEntries)
        // Neither reports itself.
        #expect(await firstLog.events.compactMap(\.found).allSatisfy { $0.name != first.name })
    }

    @Test func aTakenNameMovesToAnAlternativeAndBothAreFound() async throws {
        let name = Self.uniqueName("same")
        let (firstService, firstLog) = try startedService(Advertisement(name: name, port: 7011, txt: Self.record()))
        defer { firstService.stop() }
        #expect(try await firstLog.first("first published") { $0.published } == name)

        let (secondService, secondLog) = try startedService(Advertisement(name: name, port: 7012, txt: Self.record()))
        defer { secondService.stop() }
        let alternative = try await secondLog.first("second published") { $0.published }
        #expect(alternative != name)
        #expect(alternative.hasPrefix(name))

        let seenByFirst = try await firstLog.first("\(alternative) found") { $0.found?.name == alternative ? $0.found : nil }
        #expect(seenByFirst.port == 7012)
        let seenBySecond = try await secondLog.first("\(name) found") { $0.found?.name == name ? $0.found : nil }
        #expect(seenBySecond.port == 7011)
    }

    @Test func anAgentThatStopsIsLostToTheOthers() async throws {
        let staying = Advertisement(name: Self.uniqueName("staying"), port: 7021, txt: Self.record())
        let leaving = Advertisement(name: Self.uniqueName("leaving"), port: 7022, txt: Self.record())
        let (stayingService, stayingLog) = try startedService(staying)
        defer { stayingService.stop() }
        let (leavingService, _) = try startedService(leaving)
        _ = try await stayingLog.first("\(leaving.name) found") { $0.found?.name == leaving.name ? $0 : nil }

        leavingService.stop()
        _ = try await stayingLog.first("\(leaving.name) lost") { $0.lost == leaving.name ? $0 : nil }
    }

    @Test func aServiceWithAMalformedTXTIsIgnoredWithTheReason() async throws {
        let listener = Advertisement(name: Self.uniqueName("listener"), port: 7031, txt: Self.record())
        let broken = Advertisement(
            name: Self.uniqueName("broken"), port: 7032,
            txtEntries: [Array("id=not-a-peer-id".utf8), Array("mesh=0123456789abcdef".utf8), Array("v=1".utf8)]
        )
        let (listenerService, listenerLog) = try startedService(listener)
        defer { listenerService.stop() }
        let (brokenService, _) = try startedService(broken)
        defer { brokenService.stop() }

        let reason = try await listenerLog.first("\(broken.name) ignored") { $0.ignored?.name == broken.name ? $0.ignored?.reason : nil }
        #expect(reason.contains("peer id"))
        #expect(await listenerLog.events.compactMap(\.found).allSatisfy { $0.name != broken.name })
    }

    @Test(.enabled(if: AvahiDaemon.restartable, "only a daemon Tools/start-avahi.sh started is restarted"))
    func afterADaemonRestartAgentsArePublishedAndFoundAgain() async throws {
        let first = Advertisement(name: Self.uniqueName("restart-a"), port: 7051, txt: Self.record())
        let second = Advertisement(name: Self.uniqueName("restart-b"), port: 7052, txt: Self.record())
        let (firstService, firstLog) = try startedService(first)
        defer { firstService.stop() }
        let (secondService, secondLog) = try startedService(second)
        defer { secondService.stop() }
        _ = try await firstLog.first("\(second.name) found") { $0.found?.name == second.name ? $0 : nil }

        try AvahiDaemon.restart()

        let restartedAt = try await Self.disconnection(in: firstLog)
        let secondRestartedAt = try await Self.disconnection(in: secondLog)
        // Published again on the new daemon, and found again through it, both ways.
        #expect(try await firstLog.first(from: restartedAt, "published again") { $0.published } == first.name)
        _ = try await firstLog.first(from: restartedAt, "\(second.name) found again") { $0.found?.name == second.name ? $0 : nil }
        _ = try await secondLog.first(from: secondRestartedAt, "\(first.name) found again") { $0.found?.name == first.name ? $0 : nil }
        #expect(await firstLog.events.compactMap(\.warning) == [AvahiError.disconnected.warning])
    }

    /// Waits for the warning that the daemon went away; returns where it is in the log.
    static func disconnection(in log: EventLog) async throws -> Int {
        _ = try await log.first("the disconnection warning") { $0.warning == AvahiError.disconnected.warning ? true : nil }
        return await log.events.firstIndex(of: .warning(AvahiError.disconnected.warning))!
    }
}
