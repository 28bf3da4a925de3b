import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Foundation
import Synchronization

/// A fresh directory for one test's emulated radio, short enough for sun_path.
func temporaryRadioDirectory() throws -> String {
    _ = sweptOldDirectories
    var template = Array("/tmp/arcus-ble-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    return String(cString: made)
}

/// Transports a test leaves running (the conformance suite's link pairs) leave their sockets and
/// adverts behind when the process exits: each test process first removes the radio
/// directories that earlier runs left more than ten minutes ago.
private let sweptOldDirectories: Void = {
    let manager = FileManager.default
    let cutoff = Date().addingTimeInterval(-600)
    for name in (try? manager.contentsOfDirectory(atPath: "/tmp")) ?? [] where name.hasPrefix("arcus-ble-") {
        let path = "/tmp/" + name
        if let modified = (try? manager.attributesOfItem(atPath: path))?[.modificationDate] as? Date, modified < cutoff {
            try? manager.removeItem(atPath: path)
        }
    }
}()

/// Emulated-radio transports sharing one directory, and the topology file that moves them in
/// and out of each other's range.
final class EmulatedRadioFixture: Sendable {
    let settings: EmulatedRadioSettings
    let transports: [BluetoothTransport]
    private let cut = Mutex<Set<[Int]>>([])

    init(count: Int, phy: EmulatedPHY? = nil, connectionSetup: Duration = .milliseconds(60)) throws {
        let settings = EmulatedRadioSettings(
            directory: try temporaryRadioDirectory(), phy: phy, scanInterval: .milliseconds(200), connectionSetup: connectionSetup
        )
        self.settings = settings
        transports = (0..<count).map { BluetoothTransport(radio: .emulated(settings), peer: .numbered($0), pendingHandshakes: .generous()) }
    }

    /// Starts every transport, their events recorded from before the start.
    func start() async throws -> [TransportEventLog] {
        let logs = transports.map { TransportEventLog($0.events) }
        for transport in transports { try await transport.start() }
        return logs
    }

    /// Stops every transport, in the background (for a test's `defer`).
    func stopLater() {
        Task { for transport in transports { await transport.stop() } }
    }

    /// Writes topology.json: everyone hears everyone except the pairs cut.
    func setReachable(_ a: Int, _ b: Int, _ reachable: Bool) throws {
        let pairs = cut.withLock { cut in
            if reachable { cut.remove([a, b]); cut.remove([b, a]) } else { cut.insert([a, b]); cut.insert([b, a]) }
            return cut
        }
        var hears: [String: [String]] = [:]
        for listener in transports.indices {
            hears[PeerID.numbered(listener).description] = transports.indices
                .filter { $0 != listener && !pairs.contains([listener, $0]) }
                .map { PeerID.numbered($0).description }
        }
        try EmulatedTopology(hears: hears).write(to: settings.topologyPath)
    }
}

extension PeerID {
    static func numbered(_ index: Int) -> PeerID {
        PeerID(bytes: [UInt8](repeating: UInt8(index), count: PeerID.size))!
    }
}
