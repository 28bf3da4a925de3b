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
        /// What Read Controller Information gives as the current settings (bit 0: powered).
        let settings: Mutex<UInt32>
        /// Commands refused, until a test lifts the refusal.
        let refusals: Mutex<[UInt16: ManagementStatus]>
        /// The controllers' indices; controller i has address 11:22:33:44:55:66 + i.
        let controllers: [UInt16]
        /// Advertising instances other programs hold (of 5).
        let heldInstances: [UInt8]

        init(
            link: any Link, settings: UInt32 = 1 | 1 << 9, refusals: [UInt16: ManagementStatus] = [:], controllers: [UInt16] = [0],
            heldInstances: [UInt8] = []
        ) {
            self.link = link
            self.settings = Mutex(settings)
            self.refusals = Mutex(refusals)
            self.controllers = controllers
            self.heldInstances = heldInstances
            Task { await self.serve() }
        }

        var codes: [UInt16] { received.withLock { $0.map(\.code) } }

        private func serve() async {
            for await bytes in link.incoming {
                guard let packet = try? ManagementPacket(parsing: bytes) else { continue }
                received.withLock { $0.append(packet) }
                var answer: [UInt8] = []
                answer.appendLittleEndian(packet.code)
                if let refusal = refusals.withLock({ $0[packet.code] }) {
                    answer.append(refusal.code)
                    try? await link.send(ManagementPacket(code: 0x0002, controller: packet.controller, parameters: answer).encoded)
                    continue
                }
                answer.append(0)
                switch packet.code {
                case 0x0003:
                    answer.appendLittleEndian(UInt16(controllers.count))
                    for index in controllers { answer.appendLittleEndian(index) }
                case 0x0004:
                    answer += [0x66 + UInt8(packet.controller), 0x55, 0x44, 0x33, 0x22, 0x11, 9, 0x0F, 0x00]
                    answer.appendLittleEndian(UInt32(0x3FF))
                    answer.appendLittleEndian(settings.withLock { $0 })
                    answer += [UInt8](repeating: 0, count: 3 + 249 + 11)
                case 0x003D: answer += [0, 0, 0, 0, 31, 31, 5, UInt8(heldInstances.count)] + heldInstances
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

    /// What a discovery reported, in order.
    final class Reports: Sendable {
        let notes = Mutex<[String]>([])
    }

    static let me = PeerID(bytes: [0x40] + [UInt8](repeating: 7, count: 15))!
    static let mesh = "a1b2c3d4e5f60718"

    /// A discovery on the controller `adapter` names (the lowest without one), chosen as the
    /// transport chooses it; what it reports goes to `reports`.
    func discovery(
        _ kernel: inout KernelDouble?, adapter: BluetoothAdapter? = nil, settings: UInt32 = 1 | 1 << 9, refusals: [UInt16: ManagementStatus] = [:],
        controllers: [UInt16] = [0], heldInstances: [UInt8] = [], reports: Reports? = nil
    ) async throws -> BlueZDiscovery {
        let (near, far) = try EmulatedLinkPair.make(mtu: 4096)
        kernel = KernelDouble(link: far, settings: settings, refusals: refusals, controllers: controllers, heldInstances: heldInstances)
        let client = ManagementClient(link: near)
        let controller = try await BlueZDiscovery.controller(adapter, client: client)
        return BlueZDiscovery(
            client: client, controller: controller, psm: 0x81, peer: Self.me, meshHash: Self.mesh, lostAfter: .milliseconds(400),
            retryInterval: .milliseconds(50), report: { note in reports?.notes.withLock { $0.append(note) } }
        )
    }

    /// A discovery on controller 0, started, its first Start Service Discovery answered; `body`
    /// runs on it and the kernel's double, then it stops.
    func withStartedDiscovery(reports: Reports? = nil, _ body: (BlueZDiscovery, KernelDouble) async throws -> Void) async throws {
        var kernel: KernelDouble?
        let discovery = try await discovery(&kernel, reports: reports)
        try await discovery.start { _ in }
        #expect(await waitFor { kernel!.codes.filter { $0 == 0x003A }.count == 1 })
        try await Task.sleep(for: .milliseconds(100))  // its answer is in
        do {
            try await body(discovery, kernel!)
        } catch {
            await discovery.stop()
            throw error
        }
        await discovery.stop()
    }

    @Test("start: the controller list, its information, the advertising instances, Add Advertising with this peer's advert and the UUID in the scan response, Start Service Discovery for the Arcus UUID; stop withdraws both")
    func setsTheAdapterUp() async throws {
        var kernel: KernelDouble?
        let discovery = try await discovery(&kernel)
        try await discovery.start { _ in }
        #expect(await waitFor { kernel!.codes == [0x0003, 0x0004, 0x003D, 0x003E, 0x003A] }, "\(kernel!.codes)")
        let add = kernel!.received.withLock { $0[3] }
        let advert = ArcusAdvertisement(psm: 0x81, peer: Self.me, meshHash: Self.mesh).advertisingData
        let response = ArcusAdvertisement.scanResponseData
        #expect(Array(add.parameters.suffix(advert.count + response.count)) == advert + response)
        #expect(add.parameters.prefix(5) == [5, 0x03, 0, 0, 0], "the highest free instance (5 of 5), connectable and discoverable")
        let scan = kernel!.received.withLock { $0[4] }
        #expect(Array(scan.parameters.suffix(16)) == ArcusAdvertisement.serviceUUID.littleEndianBytes)
        await discovery.stop()
        #expect(Array(kernel!.codes.suffix(2)) == [0x003F, 0x0024])
        #expect(kernel!.received.withLock { $0.last { $0.code == 0x003F }?.parameters } == [5], "only its own instance is removed")
    }

    @Test("the advert takes an instance no other program holds, and stop removes only that one (bluetoothd's adverts stay)")
    func ownAdvertisingInstance() async throws {
        var kernel: KernelDouble?
        let discovery = try await discovery(&kernel, heldInstances: [1, 5])
        try await discovery.start { _ in }
        let add = try #require(kernel!.received.withLock { $0.first { $0.code == 0x003E } })
        #expect(add.parameters.first == 4)
        await discovery.stop()
        #expect(kernel!.received.withLock { $0.filter { $0.code == 0x003F }.map(\.parameters) } == [[4]])
    }

    @Test("--ble-adapter picks the controller by index or address; without it the lowest-numbered; an unknown one is refused naming those there are")
    func choosesTheController() async throws {
        var kernel: KernelDouble?
        #expect(try await discovery(&kernel, controllers: [1, 0]).controller == .init(index: 0, address: L2CAPAddress("11:22:33:44:55:66")!))
        #expect(try await discovery(&kernel, adapter: .index(1), controllers: [0, 1]).controller.index == 1)
        let byAddress = try await discovery(&kernel, adapter: BluetoothAdapter("11:22:33:44:55:67"), controllers: [0, 1])
        #expect(byAddress.controller.index == 1)
        #expect(kernel!.received.withLock { $0.first { $0.code == 0x003D } } == nil, "choosing starts nothing")
        try await byAddress.start { _ in }
        #expect(await waitFor { kernel!.received.withLock { $0.filter { $0.code == 0x003A }.map(\.controller) } == [1] })
        await byAddress.stop()
        await #expect(throws: BluetoothNotReady.adapterNotFound("hci7", available: ["hci0 (11:22:33:44:55:66)", "hci1 (11:22:33:44:55:67)"])) {
            _ = try await self.discovery(&kernel, adapter: .index(7), controllers: [0, 1])
        }
        #expect(BluetoothAdapter("hci2") == .index(2) && BluetoothAdapter("bogus") == nil)
    }

    @Test("a discovery the controller refuses (busy: another program discovers) does not stop start: it is reported once and retried until it runs")
    func busyDiscoveryIsRetried() async throws {
        var kernel: KernelDouble?
        let reports = Reports()
        let discovery = try await discovery(&kernel, refusals: [0x003A: .busy], reports: reports)
        try await discovery.start { _ in }
        defer { Task { await discovery.stop() } }
        #expect(await waitFor { kernel!.codes.filter { $0 == 0x003A }.count >= 3 }, "\(kernel!.codes)")
        #expect(reports.notes.withLock { $0.filter { $0.contains("could not start") }.count } == 1, "\(reports.notes.withLock { $0 })")
        kernel!.refusals.withLock { $0 = [:] }
        #expect(await waitFor { reports.notes.withLock { $0.contains { $0.contains("runs again") } } }, "\(reports.notes.withLock { $0 })")
    }

    @Test("a dial stops discovery until it ends (the kernel connects only once discovery has stopped), then discovery starts again")
    func dialPausesDiscovery() async throws {
        try await withStartedDiscovery { discovery, kernel in
            await discovery.dialStarts()
            #expect(kernel.codes.last == 0x0024)
            try await Task.sleep(for: .milliseconds(300))
            #expect(kernel.codes.filter { $0 == 0x003A }.count == 1, "discovery restarted during the dial: \(kernel.codes)")
            discovery.dialEnded()
            #expect(await waitFor { kernel.codes.filter { $0 == 0x003A }.count == 2 }, "\(kernel.codes)")
            // The kernel paused advertising to initiate the connection: the advert is added again, in
            // the same instance.
            #expect(await waitFor { kernel.received.withLock { $0.filter { $0.code == 0x003E }.map { $0.parameters.first } } == [5, 5] },
                    "\(kernel.codes)")
        }
    }

    @Test("a device connecting to the controller (which then stops advertising) has the advert added again, in the same instance")
    func readvertisesOnConnection() async throws {
        try await withStartedDiscovery { discovery, kernel in
            // Device Connected: address, LE public, no flags, no EIR.
            try await kernel.emit(0x000B, [6, 5, 4, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0])
            #expect(await waitFor { kernel.received.withLock { $0.filter { $0.code == 0x003E }.map { $0.parameters.first } } == [5, 5] },
                    "\(kernel.codes)")
        }
    }

    @Test("an advert another program removed (bluetoothd clears every instance when it starts) is added again, in an instance no one holds; another's instance removed changes nothing")
    func readvertisesWhenRemovedByAnother() async throws {
        let reports = Reports()
        try await withStartedDiscovery(reports: reports) { discovery, kernel in
            try await kernel.emit(0x0024, [3])  // bluetoothd's own instance: not this peer's
            try await Task.sleep(for: .milliseconds(100))
            #expect(kernel.codes.filter { $0 == 0x003E }.count == 1, "\(kernel.codes)")
            try await kernel.emit(0x0024, [5])  // Advertising Removed: this peer's instance
            #expect(await waitFor { kernel.received.withLock { $0.filter { $0.code == 0x003E }.map { $0.parameters.first } } == [5, 5] },
                    "\(kernel.codes)")
            // The instances were read again, and the one chosen removed (in case the controller still
            // has it set up) and added.
            #expect(kernel.codes.filter { $0 == 0x003D }.count == 2 && Array(kernel.codes.suffix(2)) == [0x003F, 0x003E], "\(kernel.codes)")
            #expect(reports.notes.withLock { $0.contains { $0.contains("removed this peer's advert") } }, "\(reports.notes.withLock { $0 })")
        }
    }

    @Test("the advert the kernel drops as the controller powers off (Advertising Removed, then New Settings) is not reported as another program's, and is set up afresh once powered")
    func advertDroppedAtPowerOff() async throws {
        let reports = Reports()
        try await withStartedDiscovery(reports: reports) { discovery, kernel in
            try await kernel.emit(0x0024, [5])
            try await kernel.emit(0x0006, [0x00, 0x02, 0, 0])
            try await Task.sleep(for: .milliseconds(800))
            #expect(kernel.codes.filter { $0 == 0x003E }.count == 1, "nothing added while off: \(kernel.codes)")
            try await kernel.emit(0x0006, [0x01, 0x02, 0, 0])
            #expect(await waitFor { kernel.codes.filter { $0 == 0x003E }.count == 2 }, "\(kernel.codes)")
            #expect(kernel.received.withLock { $0.filter { $0.code == 0x003F }.map(\.parameters) } == [[5]], "removed, then added: \(kernel.codes)")
            #expect(!reports.notes.withLock { $0.contains { $0.contains("removed this peer's advert") } }, "\(reports.notes.withLock { $0 })")
        }
    }

    @Test("an Advertising Removed event cut short (no instance) is dropped: the advert stays and discovery goes on")
    func truncatedAdvertisingRemoved() async throws {
        let reports = Reports()
        try await withStartedDiscovery(reports: reports) { discovery, kernel in
            try await kernel.emit(0x0024, [])
            try await kernel.emit(0x0013, [0x06, 0x00])  // then discovery ends: it is started again
            #expect(await waitFor { kernel.codes.filter { $0 == 0x003A }.count == 2 }, "\(kernel.codes)")
            try await Task.sleep(for: .milliseconds(700))
            #expect(kernel.codes.filter { $0 == 0x003E }.count == 1, "\(kernel.codes)")
            #expect(reports.notes.withLock { $0.isEmpty }, "\(reports.notes.withLock { $0 })")
        }
    }

    @Test("a renewal under way when the discovery stops adds nothing after stop")
    func nothingAdvertisedAfterStop() async throws {
        let reports = Reports()
        var kernel: KernelDouble?
        let discovery = try await discovery(&kernel, reports: reports)
        try await discovery.start { _ in }
        #expect(await waitFor { kernel!.codes.filter { $0 == 0x003A }.count == 1 })
        try await kernel!.emit(0x0024, [5])  // renewed half a second later, were it still running
        try await Task.sleep(for: .milliseconds(50))
        await discovery.stop()
        try await Task.sleep(for: .milliseconds(800))
        #expect(kernel!.codes.filter { $0 == 0x003E }.count == 1, "\(kernel!.codes)")
        #expect(!reports.notes.withLock { $0.contains { $0.contains("advert") } }, "\(reports.notes.withLock { $0 })")
    }

    @Test("a controller removed and back unpowered (a dongle plugged in again, before bluetoothd powers it) is adopted, and once powered it advertises again")
    func controllerBackUnpowered() async throws {
        let reports = Reports()
        try await withStartedDiscovery(reports: reports) { discovery, kernel in
            try await kernel.emit(0x0005, [])  // Index Removed
            kernel.settings.withLock { $0 = 1 << 9 }  // back with LE on, unpowered
            try await kernel.emit(0x0004, [])  // Index Added: the same address
            #expect(await waitFor { kernel.codes.filter { $0 == 0x003E }.count == 2 }, "adopted, the advert added: \(kernel.codes)")
            kernel.settings.withLock { $0 = 1 | 1 << 9 }
            try await kernel.emit(0x0006, [0x01, 0x02, 0, 0])  // New Settings: powered
            #expect(await waitFor { kernel.codes.filter { $0 == 0x003E }.count == 3 }, "renewed once powered: \(kernel.codes)")
            #expect(await waitFor { reports.notes.withLock { $0.contains { $0.contains("powered on again") } } }, "\(reports.notes.withLock { $0 })")
        }
    }

    @Test("the controller powered off and on is reported once each way (other setting changes are not), and discovery starts again")
    func powerCycleReported() async throws {
        let reports = Reports()
        try await withStartedDiscovery(reports: reports) { discovery, kernel in
            try await kernel.emit(0x0006, [0x01, 0x06, 0, 0])  // advertising on: powered still
            try await kernel.emit(0x0006, [0x00, 0x02, 0, 0])
            try await kernel.emit(0x0006, [0x00, 0x02, 0, 0])
            try await kernel.emit(0x0006, [0x01, 0x02, 0, 0])
            #expect(await waitFor { reports.notes.withLock { $0.count } == 2 }, "\(reports.notes.withLock { $0 })")
            #expect(reports.notes.withLock { $0[0].contains("powered off") && $0[1].contains("powered on") })
            #expect(await waitFor { kernel.codes.filter { $0 == 0x003A }.count == 2 }, "\(kernel.codes)")
            // Back on: the advert is added again (removed first), in its own instance.
            #expect(await waitFor { kernel.received.withLock { $0.filter { $0.code == 0x003E }.map { $0.parameters.first } } == [5, 5] },
                    "\(kernel.codes)")
        }
    }

    @Test("every peer of this mesh appears once with its address, type, PSM and id prefix, and is lost when no longer heard; its own advert and other meshes' never appear")
    func announcesPeersOfThisMesh() async throws {
        var kernel: KernelDouble?
        let discovery = try await discovery(&kernel)
        let changes = Mutex<[BlueZDiscovery.Change]>([])
        try await discovery.start { change in changes.withLock { $0.append(change) } }
        defer { Task { await discovery.stop() } }
        let mesh = ArcusAdvertisement.prefix(ofHash: Self.mesh)
        let higher = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x90, 0, 0, 1], meshPrefix: mesh)
        let lower = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x10, 0, 0, 1], meshPrefix: mesh)
        let foreign = ArcusAdvertisement(psm: 0x85, peerPrefix: [0x91, 0, 0, 1], meshPrefix: [9, 9, 9, 9])
        let own = ArcusAdvertisement(psm: 0x81, peer: Self.me, meshHash: Self.mesh)
        for _ in 0..<3 { try await kernel!.deviceFound(address: [0x66, 0x55, 0x44, 0x33, 0x22, 0x11], advert: higher.advertisingData) }
        try await kernel!.deviceFound(address: [2, 2, 2, 2, 2, 2], advert: foreign.advertisingData)
        try await kernel!.deviceFound(address: [3, 3, 3, 3, 3, 3], advert: [0x05, 0x09, 0x70, 0x75, 0x6D, 0x70])
        try await kernel!.deviceFound(address: [4, 4, 4, 4, 4, 4], advert: own.advertisingData)
        try await kernel!.deviceFound(address: [1, 1, 1, 1, 1, 1], advert: lower.advertisingData)
        let first = BlueZDiscovery.Found(address: "11:22:33:44:55:66/random/0x85", advertisement: higher)
        let second = BlueZDiscovery.Found(address: "01:01:01:01:01:01/random/0x85", advertisement: lower)
        #expect(await waitFor { changes.withLock { $0 } == [.appeared(first), .appeared(second)] }, "\(changes.withLock { $0 })")
        #expect(BlueZDiscovery.parse(first.address) == L2CAPAddress("11:22:33:44:55:66", type: .leRandom, psm: 0x85))
        #expect(BlueZDiscovery.address(L2CAPAddress("11:22:33:44:55:66", type: .leRandom, psm: 0x85)!) == first.address)
        #expect(await waitFor { Set(changes.withLock { $0 }) == [.appeared(first), .appeared(second), .lost(first), .lost(second)] },
                "\(changes.withLock { $0 })")
    }

    @Test("the RSSI the adapter reports is kept for every peer of this mesh, whichever side dials, by id prefix, and forgotten with the peer")
    func keepsSignalStrength() async throws {
        var kernel: KernelDouble?
        let discovery = try await discovery(&kernel)
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
        try await withStartedDiscovery { discovery, kernel in
            try await kernel.emit(0x0013, [0x06, 0x00])
            #expect(await waitFor { kernel.codes.filter { $0 == 0x003A }.count == 2 }, "\(kernel.codes)")
        }
    }

    @Test("an adapter powered off or with LE off, or a refused command, stops start with what to do")
    func refusals() async throws {
        var kernel: KernelDouble?
        await #expect(throws: BluetoothNotReady.poweredOff(controller: 0)) { _ = try await self.discovery(&kernel, settings: 1 << 9) }
        await #expect(throws: BluetoothNotReady.lowEnergyOff(controller: 0)) { _ = try await self.discovery(&kernel, settings: 1) }
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
