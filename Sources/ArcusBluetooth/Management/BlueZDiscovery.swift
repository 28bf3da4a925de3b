import ArcusMesh
import Foundation
import Synchronization

/// Advertising and scanning on one controller through the kernel's management socket: advertises
/// this peer (`ArcusAdvertisement`: its dynamic PSM, id and mesh prefixes; the Arcus service UUID
/// as a list in the scan response, which is what the kernel's UUID filter matches) in an
/// advertising instance no one else holds, and discovers the devices that advertise the Arcus
/// service, announcing those of this mesh. A peer not heard for `lostAfter` is lost.
///
/// Discovery is kept running: the kernel ends it after about 10 s, bluetoothd may stop it, a
/// controller may be busy (another program discovering) or powered off; each time it is started
/// again, at once or, after a refusal, every `retryInterval`, and a refusal is reported once until
/// it clears. It is paused while this peer dials: the kernel makes an LE connection only once
/// discovery has stopped.
///
/// Every peer of the mesh heard is announced, with its id prefix: of two that hear each other the
/// agent dials only from the lower prefix (`TransportEndpoint.isDialled(by:)`).
public final class BlueZDiscovery: Sendable {
    public struct Found: Sendable, Hashable {
        /// "AA:BB:CC:DD:EE:FF/public/0x81": what `BluetoothTransport` dials.
        public var address: String
        public var advertisement: ArcusAdvertisement
    }

    public enum Change: Sendable, Hashable {
        case appeared(Found)
        case lost(Found)
    }

    /// A controller as the kernel lists it: its index (hciN) and its public address.
    public struct Controller: Sendable, Hashable, CustomStringConvertible {
        public var index: UInt16
        public var address: L2CAPAddress

        public var description: String { "hci\(index) (\(address.text))" }
    }

    /// A peer not heard for this long is lost (adverts come several times a second; discovery
    /// pauses for dials and restarts every 10 s or so).
    let lostAfter: Duration
    let retryInterval: Duration

    private let client: ManagementClient
    private let advertisement: ArcusAdvertisement
    private let meshHash: String
    private let report: @Sendable (String) -> Void
    private let state: Mutex<State>
    /// Nudges `keepDiscovering` to look again: discovery stopped, a dial ended, the controller
    /// came back. One pending nudge is enough.
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    private struct State {
        var controller: Controller
        /// The advertising instance this peer added, once it has.
        var instance: UInt8?
        var discovering = false
        /// Whether the controller was powered at its last New Settings (it is when chosen).
        var powered = true
        /// Dials under way: discovery stays off while there are any.
        var dials = 0
        /// The refusal last reported, so that a repeated one is not.
        var reported: String?
        var seen: [String: (found: Found, at: ContinuousClock.Instant)] = [:]
        /// The latest RSSI of each peer of the mesh heard, by its id prefix.
        var signal: [[UInt8]: (dBm: Int8, at: ContinuousClock.Instant)] = [:]
        var tasks: [Task<Void, Never>] = []
        /// Set by `stop()`: nothing is advertised after it.
        var stopped = false
    }

    public init(
        client: ManagementClient, controller: Controller, psm: UInt8, peer: PeerID, meshHash: String, lostAfter: Duration = .seconds(30),
        retryInterval: Duration = .seconds(2), report: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.lostAfter = lostAfter
        self.retryInterval = retryInterval
        self.client = client
        self.advertisement = ArcusAdvertisement(psm: psm, peer: peer, meshHash: meshHash)
        self.meshHash = meshHash
        self.report = report
        self.state = Mutex(State(controller: controller))
        (wakeups, wake) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    public var controller: Controller { state.withLock { $0.controller } }

    // MARK: Choosing the controller

    /// The controller `adapter` names, or without one the lowest-numbered; checked to be powered
    /// with LE on. Throws `BluetoothNotReady` (with what to do) and `ManagementError`. Starts
    /// `client`.
    public static func controller(_ adapter: BluetoothAdapter?, client: ManagementClient) async throws -> Controller {
        await client.start()
        let indices = try await controllerIndices(client)
        guard !indices.isEmpty else { throw BluetoothNotReady.noAdapter }
        var listed: [(controller: Controller, settings: UInt32)] = []
        for index in indices {
            let (address, settings) = try await information(of: index, client)
            listed.append((Controller(index: index, address: address), settings))
        }
        let chosen: (controller: Controller, settings: UInt32)?
        switch adapter {
        case nil: chosen = listed.first
        case .index(let index): chosen = listed.first { $0.controller.index == index }
        case .address(let address): chosen = listed.first { $0.controller.address.bytes == address.bytes }
        }
        guard let chosen else {
            throw BluetoothNotReady.adapterNotFound(adapter?.description ?? "", available: listed.map(\.controller.description))
        }
        guard chosen.settings & 1 != 0 else { throw BluetoothNotReady.poweredOff(controller: chosen.controller.index) }
        guard chosen.settings & (1 << 9) != 0 else { throw BluetoothNotReady.lowEnergyOff(controller: chosen.controller.index) }
        return chosen.controller
    }

    /// The kernel's controller indices, lowest first.
    static func controllerIndices(_ client: ManagementClient) async throws -> [UInt16] {
        let list = try await client.send(.readControllerIndexList, controller: ManagementPacket.nonController)
        var reader = LittleEndianReader(list)
        let count = Int(try reader.uint16())
        guard reader.remaining == count * 2 else { throw ManagementError.malformed("a controller list of \(count) with \(reader.remaining) bytes") }
        return try (0..<count).map { _ in try reader.uint16() }.sorted()
    }

    /// A controller's public address and current settings (Read Controller Information).
    static func information(of index: UInt16, _ client: ManagementClient) async throws -> (L2CAPAddress, UInt32) {
        let information = try await client.send(.readControllerInformation, controller: index)
        // Address 6, version 1, manufacturer 2, supported settings 4, then the current settings.
        guard information.count >= 17 else { throw ManagementError.malformed("controller information of \(information.count) bytes") }
        let text = information[0..<6].reversed().map { String(format: "%02X", $0) }.joined(separator: ":")
        let current = UInt32(information[13]) | UInt32(information[14]) << 8 | UInt32(information[15]) << 16 | UInt32(information[16]) << 24
        return (L2CAPAddress(text, type: .lePublic)!, current)
    }

    // MARK: Running

    /// Advertises and starts discovering; changes go to `changes`. Throws `ManagementError` for
    /// an advert the kernel refused; a discovery it refuses (busy, say) is retried and reported.
    public func start(_ changes: @escaping @Sendable (Change) -> Void) async throws {
        await client.start()
        try await advertise(renewing: false)
        let listening = Task { [client] in
            for await (from, event) in client.events {
                self.handle(event, from: from, changes)
            }
        }
        let discovering = Task { await self.keepDiscovering() }
        wake.yield()
        let sweeping = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.lostAfter / 4)
                self.sweep(changes)
            }
        }
        state.withLock { $0.tasks += [listening, discovering, sweeping] }
    }

    /// Adds this peer's advert: in its own instance, or if it has none (at the start, or dropped by
    /// the kernel or another program) in the highest no one holds (bluetoothd and other programs
    /// number theirs from 1). `renewing`: removed first, as adding over an instance the controller
    /// still has set up (extended advertising, or one the kernel dropped from its list) left it
    /// advertising nothing at all.
    private func advertise(renewing: Bool) async throws {
        let (controller, kept) = state.withLock { ($0.controller.index, $0.instance) }
        let instance: UInt8
        if let kept { instance = kept } else { instance = try await freeInstance(on: controller) }
        if renewing { _ = try? await client.send(.removeAdvertising(instance: instance), controller: controller) }
        _ = try await client.send(
            .addAdvertising(instance: instance, data: advertisement.advertisingData, scanResponse: ArcusAdvertisement.scanResponseData),
            controller: controller
        )
        state.withLock { $0.instance = instance }
    }

    private func freeInstance(on controller: UInt16) async throws -> UInt8 {
        let features = try await client.send(.readAdvertisingFeatures, controller: controller)
        // Supported flags 4, max data 1, max scan response 1, max instances 1, instances 1, then each.
        guard features.count >= 8, features.count == 8 + Int(features[7]) else {
            throw ManagementError.malformed("advertising features of \(features.count) bytes")
        }
        let held = Set(features[8...])
        guard let instance = (1...max(1, features[6])).reversed().first(where: { !held.contains($0) }) else {
            throw BluetoothNotReady.noAdvertisingInstance(controller: controller, instances: Int(features[6]))
        }
        return instance
    }

    private func handle(_ event: ManagementEvent, from: UInt16, _ changes: @escaping @Sendable (Change) -> Void) {
        let controller = state.withLock { $0.controller }
        switch event {
        case .deviceFound(let device) where from == controller.index:
            found(device, changes)
        case .discovering(let on) where from == controller.index:
            state.withLock { $0.discovering = on }
            if !on { wake.yield() }
        case .newSettings(let settings) where from == controller.index:
            // New Settings comes for every change (advertising on, say): only power is news.
            let powered = settings & 1 != 0
            let changed = state.withLock { state in
                defer { state.powered = powered }
                if !powered { state.discovering = false }
                return state.powered != powered
            }
            guard changed else { break }
            if powered {
                wake.yield()
                // The instance outlives the power cycle, but the controller came back advertising
                // nothing (VM pass: the peer was never heard again).
                Task { await self.readvertise() }
            }
            report(powered
                ? "Bluetooth controller \(controller) is powered on again: advertising and discovering"
                : "Bluetooth controller \(controller) was powered off: its links are gone; they come back when it is powered on")
        case .advertisingRemoved(let instance) where from == controller.index && instance == state.withLock({ $0.instance }):
            // bluetoothd removes every instance when it starts (a restart): advertise again, in
            // an instance no one holds now (bluetoothd may have added its own). The kernel also
            // drops them as the controller powers off, just before New Settings says so: a moment
            // later, a controller still on advertises again; one that went off does when it is
            // powered on.
            state.withLock { $0.instance = nil }
            Task {
                try? await Task.sleep(for: .milliseconds(500))
                guard self.state.withLock({ $0.powered && $0.instance == nil && !$0.stopped }) else { return }
                self.report("Bluetooth controller \(controller): another program removed this peer's advert (bluetoothd restarted?); it is added again")
                await self.readvertise()
            }
        case .deviceConnected where from == controller.index:
            // Whoever connected (a peer, or bluetoothd holding a link open for its own GATT
            // client), the controller stopped advertising.
            Task { await self.readvertise() }
        case .indexRemoved where from == controller.index:
            report("Bluetooth controller \(controller) was removed: its links are gone; they come back when it returns")
            state.withLock { state in
                state.discovering = false
                state.powered = false
                state.instance = nil
            }
        case .indexAdded:
            Task { await self.adopt(from) }
        default:
            break
        }
    }

    /// A controller came: if it has this peer's controller's address (the same radio back, under
    /// a new index perhaps), advertise and discover on it again.
    private func adopt(_ index: UInt16) async {
        guard let (address, settings) = try? await Self.information(of: index, client),
              address.bytes == state.withLock({ $0.controller.address.bytes }), !state.withLock({ $0.stopped })
        else { return }
        state.withLock { state in
            state.controller.index = index
            state.discovering = false
            // A controller may come back off (a dongle plugged in again, before bluetoothd
            // powers it): its New Settings then says it came on, and the advert is renewed.
            state.powered = settings & 1 != 0
        }
        report("Bluetooth controller \(controller) is back")
        wake.yield()
        do {
            try await advertise(renewing: false)
        } catch {
            report("Bluetooth controller \(controller): the advert could not be added again: \(error)")
        }
    }

    /// At each nudge, starts discovery if it is off and no dial is under way; after a refusal,
    /// nudges itself again `retryInterval` later.
    private func keepDiscovering() async {
        for await _ in wakeups {
            let (controller, starts) = state.withLock { ($0.controller, !$0.discovering && $0.dials == 0) }
            if starts {
                do {
                    _ = try await client.send(.startServiceDiscovery(uuid: ArcusAdvertisement.serviceUUID), controller: controller.index)
                    let cleared = state.withLock { state in
                        // The Discovering event comes too, but a dial may already want it off.
                        state.discovering = true
                        defer { state.reported = nil }
                        return state.reported != nil
                    }
                    if cleared { report("Bluetooth discovery on \(controller) runs again") }
                } catch {
                    let text = "\(error)"
                    let isNew = state.withLock { state in
                        defer { state.reported = text }
                        return state.reported != text
                    }
                    if isNew { report("Bluetooth discovery on \(controller) could not start, retried every \(retryInterval): \(text)") }
                    guard (try? await Task.sleep(for: retryInterval)) != nil else { return }
                    wake.yield()
                }
            }
        }
    }

    /// Stops discovery until `dialEnded()`: the kernel puts an LE connection off until
    /// discovery ends (up to 10 s later) otherwise.
    public func dialStarts() async {
        let (controller, stops) = state.withLock { state in
            state.dials += 1
            defer { state.discovering = false }
            return (state.controller, state.discovering)
        }
        if stops { _ = try? await client.send(.stopDiscovery, controller: controller.index) }
    }

    public func dialEnded() {
        let last = state.withLock { state in
            state.dials -= 1
            return state.dials == 0
        }
        if last { wake.yield() }
        Task { await readvertise() }
    }

    /// Adds the advert again, in its own instance: the controller stops advertising when a device
    /// connects to it, the kernel pauses advertising while it initiates a connection, and
    /// (kernel 6.1) resumes it only once a connection ends. A peer that advertises no more while
    /// linked cannot be reached by a third: three agents never all linked (KernelBluetoothAgentTests).
    func readvertise() async {
        let (controller, renews) = state.withLock { ($0.controller, $0.powered && !$0.stopped) }
        // A controller that is off advertises nothing (the kernel drops its instances as it powers
        // off): it is renewed when New Settings says it is on again. Stopped: withdrawn for good.
        guard renews else { return }
        do {
            try await advertise(renewing: true)
        } catch {
            report("Bluetooth controller \(controller): the advert could not be renewed: \(error)")
        }
    }

    /// Withdraws the advert, stops discovering and closes the socket.
    public func stop() async {
        // Tasks started by events (a renewal, a controller adopted) check `stopped` before acting.
        let (controller, instance, tasks) = state.withLock { state in
            defer {
                state.tasks = []
                state.stopped = true
            }
            return (state.controller, state.instance, state.tasks)
        }
        wake.finish()
        for task in tasks { task.cancel() }
        if let instance {
            _ = try? await client.send(.removeAdvertising(instance: instance), controller: controller.index)
            _ = try? await client.send(.stopDiscovery, controller: controller.index)
        }
        await client.close()
    }

    /// The RSSI (dBm) of each peer of the mesh heard within `lostAfter`, by its 4-byte id prefix,
    /// as the adapter reported it with the peer's latest advert.
    public var signalStrengths: [[UInt8]: Int8] {
        let now = ContinuousClock.now
        return state.withLock { state in state.signal.filter { now - $0.value.at < lostAfter }.mapValues(\.dBm) }
    }

    func found(_ device: ManagementEvent.DeviceFound, _ changes: @Sendable (Change) -> Void) {
        guard let advert = ArcusAdvertisement(advertisingData: device.advertisingData), advert.belongs(toMesh: meshHash) else { return }
        // Every peer's signal, whichever side dials.
        if let rssi = device.rssi { state.withLock { $0.signal[advert.peerPrefix] = (rssi, .now) } }
        // Every peer of the mesh but this one (a controller may hear its own advert).
        guard advert.peerPrefix != advertisement.peerPrefix else { return }
        let address = Self.address(device.address, type: device.addressType, psm: advert.psm)
        let found = Found(address: address, advertisement: advert)
        let isNew = state.withLock { state in
            defer { state.seen[address] = (found, .now) }
            return state.seen[address] == nil
        }
        if isNew { changes(.appeared(found)) }
    }

    func sweep(_ changes: @Sendable (Change) -> Void) {
        let now = ContinuousClock.now
        let gone = state.withLock { state -> [Found] in
            let stale = state.seen.filter { now - $0.value.at >= lostAfter }
            for address in stale.keys { state.seen[address] = nil }
            return stale.values.map(\.found)
        }
        for found in gone { changes(.lost(found)) }
    }

    /// "AA:BB:CC:DD:EE:FF/public/0x81" from the kernel's little-endian address bytes.
    static func address(_ bytes: [UInt8], type: UInt8, psm: UInt8) -> String {
        let text = bytes.reversed().map { String(format: "%02X", $0) }.joined(separator: ":")
        return "\(text)/\(type == 2 ? "random" : "public")/0x\(String(psm, radix: 16))"
    }

    /// How an endpoint names `address`, as discovery announces it: "AA:BB:CC:DD:EE:FF/public/0x81".
    public static func address(_ address: L2CAPAddress) -> String {
        "\(address.text)/\(address.type == .leRandom ? "random" : "public")/0x\(String(address.psm, radix: 16))"
    }

    /// The address, type and PSM of "AA:BB:CC:DD:EE:FF/public/0x81"; nil for anything else.
    public static func parse(_ address: String) -> L2CAPAddress? {
        let parts = address.split(separator: "/")
        guard parts.count == 3, parts[2].hasPrefix("0x"), let psm = UInt16(parts[2].dropFirst(2), radix: 16),
              L2CAPAddress.dynamicPSMs.contains(psm) else { return nil }
        let type: L2CAPAddress.AddressType
        switch parts[1] {
        case "public": type = .lePublic
        case "random": type = .leRandom
        default: return nil
        }
        return L2CAPAddress(String(parts[0]), type: type, psm: psm)
    }
}

/// Why the adapter cannot be used as it is, with what to do.
public enum BluetoothNotReady: Error, Sendable, Hashable, CustomStringConvertible {
    case noAdapter
    case adapterNotFound(String, available: [String])
    case poweredOff(controller: UInt16)
    case lowEnergyOff(controller: UInt16)
    case noAdvertisingInstance(controller: UInt16, instances: Int)

    public var description: String {
        switch self {
        case .noAdapter:
            return "the kernel knows no Bluetooth controller: plug one in or enable it (`btmgmt info`, `rfkill list`)"
        case .adapterNotFound(let name, let available):
            return "no Bluetooth controller is \(name); the kernel has \(available.joined(separator: ", ")): give --ble-adapter (or ble_adapter in the config) one of them"
        case .poweredOff(let controller):
            return "Bluetooth controller hci\(controller) is powered off: `btmgmt --index \(controller) power on` (bluetoothd keeps it on when AutoEnable=true)"
        case .lowEnergyOff(let controller):
            return "Bluetooth controller hci\(controller) has Low Energy off: `btmgmt --index \(controller) le on` (or ControllerMode = le in /etc/bluetooth/main.conf)"
        case .noAdvertisingInstance(let controller, let instances):
            return "Bluetooth controller hci\(controller) has all its \(instances) advertising instances taken by other programs: `btmgmt --index \(controller) advinfo` lists them"
        }
    }
}
