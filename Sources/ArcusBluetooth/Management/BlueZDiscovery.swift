import ArcusMesh
import Foundation
import Synchronization

/// Advertising and scanning on a real adapter through the kernel's management socket: picks the
/// first controller, checks that it is powered with LE on, advertises this peer
/// (`ArcusAdvertisement`: its dynamic PSM, id and mesh prefixes), and discovers the devices that
/// advertise the Arcus service, announcing those of this mesh. Discovery that stops on its own
/// (the kernel ends it after a while) is started again; a peer not heard for `lostAfter` is lost.
///
/// Tie-break as the other transports do it: of two peers that hear each other, the one with the
/// lower id prefix dials; so only peers whose prefix is higher are announced (the others dial us).
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

    static let advertisingInstance: UInt8 = 1
    /// A peer not heard for this long is lost (adverts come several times a second).
    let lostAfter: Duration

    private let client: ManagementClient
    private let advertisement: ArcusAdvertisement
    private let meshHash: String
    private let state = Mutex<State>(State())

    private struct State {
        var controller: UInt16?
        var seen: [String: (found: Found, at: ContinuousClock.Instant)] = [:]
        /// The latest RSSI of each peer of the mesh heard, by its id prefix.
        var signal: [[UInt8]: (dBm: Int8, at: ContinuousClock.Instant)] = [:]
        var tasks: [Task<Void, Never>] = []
    }

    public init(client: ManagementClient, psm: UInt8, peer: PeerID, meshHash: String, lostAfter: Duration = .seconds(10)) {
        self.lostAfter = lostAfter
        self.client = client
        self.advertisement = ArcusAdvertisement(psm: psm, peer: peer, meshHash: meshHash)
        self.meshHash = meshHash
    }

    /// Sets the adapter up and starts advertising and discovering; changes go to `changes`.
    /// Throws `BluetoothNotReady` (with what to do) for an adapter that is missing, off or not LE,
    /// and `ManagementError` for a command the kernel refused.
    public func start(_ changes: @escaping @Sendable (Change) -> Void) async throws {
        await client.start()
        let list = try await client.send(.readControllerIndexList, controller: ManagementPacket.nonController)
        guard list.count >= 4 else { throw BluetoothNotReady.noAdapter }
        let controller = UInt16(list[2]) | UInt16(list[3]) << 8
        let information = try await client.send(.readControllerInformation, controller: controller)
        // Address 6, version 1, manufacturer 2, supported settings 4, then the current settings.
        guard information.count >= 17 else { throw ManagementError.malformed("controller information of \(information.count) bytes") }
        let current = UInt32(information[13]) | UInt32(information[14]) << 8 | UInt32(information[15]) << 16 | UInt32(information[16]) << 24
        guard current & 1 != 0 else { throw BluetoothNotReady.poweredOff(controller: controller) }
        guard current & (1 << 9) != 0 else { throw BluetoothNotReady.lowEnergyOff(controller: controller) }
        state.withLock { $0.controller = controller }

        _ = try await client.send(.addAdvertising(instance: Self.advertisingInstance, data: advertisement.advertisingData), controller: controller)
        _ = try await client.send(.startServiceDiscovery(uuid: ArcusAdvertisement.serviceUUID), controller: controller)

        let listening = Task { [client] in
            for await (from, event) in client.events where from == controller {
                switch event {
                case .deviceFound(let device): self.found(device, changes)
                case .discovering(false):
                    // The kernel ended discovery: start it again, a moment later.
                    try? await Task.sleep(for: .seconds(1))
                    _ = try? await client.send(.startServiceDiscovery(uuid: ArcusAdvertisement.serviceUUID), controller: controller)
                default: break
                }
            }
        }
        let sweeping = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.lostAfter / 4)
                self.sweep(changes)
            }
        }
        state.withLock { $0.tasks += [listening, sweeping] }
    }

    /// Withdraws the advert, stops discovering and closes the socket.
    public func stop() async {
        let (controller, tasks) = state.withLock { state in
            defer { state.tasks = [] }
            return (state.controller, state.tasks)
        }
        for task in tasks { task.cancel() }
        if let controller {
            _ = try? await client.send(.removeAdvertising(instance: Self.advertisingInstance), controller: controller)
            _ = try? await client.send(.stopDiscovery, controller: controller)
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
        // The lower prefix dials: announce only peers whose prefix is above ours (not ourselves).
        guard advertisement.peerPrefix.lexicographicallyPrecedes(advert.peerPrefix) else { return }
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
    case poweredOff(controller: UInt16)
    case lowEnergyOff(controller: UInt16)

    public var description: String {
        switch self {
        case .noAdapter:
            return "the kernel knows no Bluetooth controller: plug one in or enable it (`btmgmt info`, `rfkill list`)"
        case .poweredOff(let controller):
            return "Bluetooth controller hci\(controller) is powered off: `btmgmt --index \(controller) power on` (bluetoothd keeps it on when AutoEnable=true)"
        case .lowEnergyOff(let controller):
            return "Bluetooth controller hci\(controller) has Low Energy off: `btmgmt --index \(controller) le on` (or ControllerMode = le in /etc/bluetooth/main.conf)"
        }
    }
}
