import Foundation
import Synchronization
import Testing
@testable import ArcusBluetooth
@testable import ArcusMesh

/// Discovery on a real adapter, against a double of the kernel's management socket played over
/// an emulated SOCK_SEQPACKET pair: the commands it sends, byte for byte as mgmt-api.txt has
/// them, and what it makes of the kernel's answers and events. No radio needed.
@Suite("BlueZ discovery through the management socket", .serialized, .timeLimit(.minutes(1)))
struct BlueZDiscoveryTests {
    /// The kernel's end: answers every command (Command Complete, or a refusal it was told to
    /// give), remembers what it got, and sends events when asked.
    final class KernelDouble: Sendable {
        let link: any Link
        let received = Mutex<[ManagementPacket]>([])
        let settings: UInt32
        let refusals: [UInt16: ManagementStatus]

        init(link: any Link, settings: UInt32 = 1 | 1 << 9, refusals: [UInt16: ManagementStatus] = [:]) {
            self.link = link
            self.settings = settings
            self.refusals = refusals
            Task { await self.serve() }
        }

        var codes: [UInt16] { received.withLock { $0.map(\.code) } }

        private func serve() async {
            for await bytes in link.incoming {
                guard let packet = try? ManagementPacket(parsing: bytes) else { continue }
                received.withLock { $0.append(packet) }
                var answer: [UInt8] = []
                answer.appendLittleEndian(packet.code)
                if let refusal = refusals[packet.code] {
                    answer.append(refusal.code)
                    try? await link.send(ManagementPacket(code: 0x0002, controller: packet.controller, parameters: answer).encoded)
                    continue
                }
                answer.append(0)
                switch packet.code {
                case 0x0003: answer += [1, 0, 0, 0]  // one controller, index 0
                case 0x0004:
                    answer += [0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 9, 0x0F, 0x00]
                    answer.appendLittleEndian(UInt32(0x3FF))
                    answer.appendLittleEndian(settings)
                    answer += [UInt8](repeating: 0, count: 3 + 249 + 11)
                default: answer += packet.parameters.prefix(1)
                }
                try? await link.send(ManagementPacket(code: 0x0001, controller: packet.controller, parameters: answer).encoded)
            }
        }

        func emit(_ code: UInt16, _ parameters: [UInt8]) async throws {
            try await link.send(ManagementPacket(code: code, controller: 0, parameters: parameters).encoded)
        }

        /// Device Found: address, type, RSSI (−60 dBm unless said), flags, the advert.
        func deviceFound(address: [UInt8], advert: [UInt8], type: UInt8 = 2, rssi: Int8 = -60) async throws {
            var parameters = address + [type, UInt8(bitPattern: rssi), 0, 0, 0, 0]
            parameters.appendLittleEndian(UInt16(advert.count + 3))
            try await emit(0x0012, parameters + [0x02, 0x01, 0x06] + advert)
        }
    }

    static let me = PeerID(bytes: [0x40] + [UInt8](repeating: 7, count: 15))!
    static let mesh = "a1b2c3d4e5f60718"

    func discovery(_ kernel: inout KernelDouble?, settings: UInt32 = 1 | 1 << 9, refusals: [UInt16: ManagementStatus] = [:]) throws -> BlueZDiscovery {
        let (near, far) = try EmulatedLinkPair.make(mtu: 4096)
        kernel = KernelDouble(link: far, settings: settings, refusals: refusals)
        return BlueZDiscovery(client: ManagementClient(link: near), psm: 0x81, peer: Self.me, meshHash: Self.mesh, lostAfter: .milliseconds(400))
    }

    @Test("start: the controller list, its information, Add Advertising with this peer's advert, Start Service Discovery for the Arcus UUID; stop withdraws both")
    func setsTheAdapterUp() async throws {
        var kernel: KernelDouble?
        let discovery = try discovery(&kernel)
        try await discovery.start { _ in }
        #expect(kernel!.codes == [0x0003, 0x0004, 0x003E, 0x003A])
        let add = kernel!.received.withLock { $0[2] }
        let advert = ArcusAdvertisement(psm: 0x81, peer: Self.me, meshHash: Self.mesh).advertisingData
        #expect(Array(add.parameters.suffix(advert.count)) == advert)
        #expect(add.parameters.prefix(5) == [1, 0x03, 0, 0, 0], "instance 1, connectable and discoverable")
        let scan = kernel!.received.withLock { $0[3] }
        #expect(Array(scan.parameters.suffix(16)) == ArcusAdvertisement.serviceUUID.littleEndianBytes)
        await discovery.stop()
        #expect(Array(kernel!.codes.suffix(2)) == [0x003F, 0x0024])
    }

    @Test("a peer of this mesh with a higher id prefix appears once with its address, type and PSM, and is lost when no longer heard; others never appear")
    func announcesPeersOfThisMesh() async throws {
        var kernel: KernelDouble?
        let discovery = try discovery(&kernel)
        let changes = Mutex<[BlueZDiscovery.Change]>([])
        try await discovery.start { change in changes.withLock { $0.append(change) } }
        defer { Task { await discovery.stop() } }
        let higher = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x90, 0, 0, 1], meshPrefix: ArcusAdvertisement.prefix(ofHash: Self.mesh))
        let lower = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x10, 0, 0, 1], meshPrefix: ArcusAdvertisement.prefix(ofHash: Self.mesh))
        let foreign = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x91, 0, 0, 1], meshPrefix: [9, 9, 9, 9])
        for _ in 0..<3 { try await kernel!.deviceFound(address: [0x66, 0x55, 0x44, 0x33, 0x22, 0x11], advert: higher.advertisingData) }
        try await kernel!.deviceFound(address: [1, 1, 1, 1, 1, 1], advert: lower.advertisingData)
        try await kernel!.deviceFound(address: [2, 2, 2, 2, 2, 2], advert: foreign.advertisingData)
        try await kernel!.deviceFound(address: [3, 3, 3, 3, 3, 3], advert: [0x05, 0x09, 0x70, 0x75, 0x6D, 0x70])
        let expected = BlueZDiscovery.Found(address: "11:22:33:44:55:66/random/0x85", advertisement: higher)
        #expect(await waitFor { changes.withLock { $0 } == [.appeared(expected)] }, "\(changes.withLock { $0 })")
        #expect(BlueZDiscovery.parse(expected.address) == L2CAPAddress("11:22:33:44:55:66", type: .leRandom, psm: 0x85))
        #expect(await waitFor { changes.withLock { $0 } == [.appeared(expected), .lost(expected)] }, "\(changes.withLock { $0 })")
    }

    @Test("the RSSI the adapter reports is kept for every peer of this mesh, whichever side dials, by id prefix, and forgotten with the peer")
    func keepsSignalStrength() async throws {
        var kernel: KernelDouble?
        let discovery = try discovery(&kernel)
        try await discovery.start { _ in }
        defer { Task { await discovery.stop() } }
        let mesh = ArcusAdvertisement.prefix(ofHash: Self.mesh)
        let higher = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x90, 0, 0, 1], meshPrefix: mesh)
        let lower = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x10, 0, 0, 1], meshPrefix: mesh)
        let foreign = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x91, 0, 0, 1], meshPrefix: [9, 9, 9, 9])
        try await kernel!.deviceFound(address: [6, 5, 4, 3, 2, 1], advert: higher.advertisingData, rssi: -70)
        try await kernel!.deviceFound(address: [6, 5, 4, 3, 2, 1], advert: higher.advertisingData, rssi: -58)
        try await kernel!.deviceFound(address: [1, 1, 1, 1, 1, 1], advert: lower.advertisingData, rssi: -81)
        try await kernel!.deviceFound(address: [2, 2, 2, 2, 2, 2], advert: foreign.advertisingData, rssi: -40)
        let expected: [[UInt8]: Int8] = [[0x90, 0, 0, 1]: -58, [0x10, 0, 0, 1]: -81]
        #expect(await waitFor { discovery.signalStrengths == expected }, "\(discovery.signalStrengths)")
        // 127 is the kernel's "no figure": it does not refresh the last one, which goes after `lostAfter`.
        try await kernel!.deviceFound(address: [6, 5, 4, 3, 2, 1], advert: higher.advertisingData, rssi: 127)
        #expect(await waitFor { discovery.signalStrengths.isEmpty }, "\(discovery.signalStrengths)")
    }

    @Test("discovery the kernel ends on its own is started again")
    func restartsDiscovery() async throws {
        var kernel: KernelDouble?
        let discovery = try discovery(&kernel)
        try await discovery.start { _ in }
        defer { Task { await discovery.stop() } }
        try await kernel!.emit(0x0013, [0x06, 0x00])
        #expect(await waitFor { kernel!.codes.filter { $0 == 0x003A }.count == 2 }, "\(kernel!.codes)")
    }

    @Test("an adapter powered off or with LE off, or a refused command, stops start with what to do")
    func refusals() async throws {
        var kernel: KernelDouble?
        await #expect(throws: BluetoothNotReady.poweredOff(controller: 0)) { try await self.discovery(&kernel, settings: 1 << 9).start { _ in } }
        await #expect(throws: BluetoothNotReady.lowEnergyOff(controller: 0)) { try await self.discovery(&kernel, settings: 1).start { _ in } }
        #expect(BluetoothNotReady.poweredOff(controller: 0).description.contains("power on"))
        do {
            try await discovery(&kernel, refusals: [0x003E: .permissionDenied]).start { _ in }
            Issue.record("a refused Add Advertising did not stop start")
        } catch let error as ManagementError {
            #expect(error == .refused(command: 0x003E, status: .permissionDenied))
            #expect("\(error)".contains("CAP_NET_ADMIN"))
        }
    }

    func waitFor(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
