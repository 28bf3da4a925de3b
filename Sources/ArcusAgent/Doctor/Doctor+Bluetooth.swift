import ArcusBluetooth
import Foundation
import Synchronization

extension Doctor {
    /// The emulated radio's directory; or, for the adapter, the kernel's Bluetooth support, an
    /// adapter, bluetoothd and the capability the management socket needs.
    func bluetooth() -> [DoctorCheck] {
        if let directory = configuration.bleEmulatedDirectory {
            return [emulatedRadio(directory)]
        }
        var checks: [DoctorCheck] = []
        do {
            _ = try SeqPacketSocket.l2cap()
            checks.append(DoctorCheck(area: "ble", name: "kernel", status: .ok, detail: "L2CAP sockets open: the kernel has Bluetooth"))
        } catch let error as BluetoothUnavailable {
            checks.append(DoctorCheck(area: "ble", name: "kernel", status: .failure, detail: "\(error)"))
            return checks
        } catch {
            checks.append(DoctorCheck(area: "ble", name: "kernel", status: .failure, detail: "an L2CAP socket does not open: \(error)"))
            return checks
        }
        checks.append(adapter())
        checks.append(Self.processRuns("bluetoothd")
            ? DoctorCheck(area: "ble", name: "bluetoothd", status: .ok, detail: "running")
            : DoctorCheck(area: "ble", name: "bluetoothd", status: .warning, detail: "not running",
                          fix: "systemctl start bluetooth (it keeps the adapter powered and LE on; see Hardware/Bluetooth.md)"))
        do {
            _ = try SeqPacketSocket.management()
            checks.append(DoctorCheck(area: "ble", name: "management socket", status: .ok,
                                      detail: "opens: adverts and scanning can go through the kernel (needs CAP_NET_ADMIN, which this process has)"))
        } catch {
            checks.append(DoctorCheck(area: "ble", name: "management socket", status: .failure,
                                      detail: "does not open, so this peer can neither advertise nor scan: \(error)",
                                      fix: "run as a service user with AmbientCapabilities=CAP_NET_ADMIN (Hardware/systemd/arcus.service)"))
        }
        return checks
    }

    /// The configured controller (or the one the agent would pick), asked through the management
    /// socket as the agent asks it, then a listener opened on it as the agent opens one: socket,
    /// bind, the channel options, listen.
    private func adapter() -> DoctorCheck {
        let adapter = configuration.bleAdapter
        let result = Self.waitFor { () async throws -> BlueZDiscovery.Controller in
            let management = try SeqPacketLink(socket: try SeqPacketSocket.management(), mtu: 4096, description: "bluetooth management")
            let client = ManagementClient(link: management)
            defer { Task { await client.close() } }
            return try await BlueZDiscovery.controller(adapter, client: client)
        }
        let controller: BlueZDiscovery.Controller
        switch result {
        case .success(let chosen): controller = chosen
        case .failure(let error):
            return DoctorCheck(area: "ble", name: "adapter", status: .failure, detail: "\(error)",
                               fix: adapter == nil ? "`btmgmt info` lists the controllers" : "give --ble-adapter a controller `btmgmt info` lists")
        }
        let settings = L2CAPRadioSettings(adapter: adapter, psm: configuration.blePSM ?? 0)
        var address = controller.address
        address.psm = settings.psm
        do {
            try SeqPacketSocket.l2capListener(on: address, receiveMTU: settings.receiveMTU, security: settings.security).close()
        } catch {
            return DoctorCheck(area: "ble", name: "adapter", status: .failure,
                               detail: "\(controller) is powered with LE on, but an L2CAP listener does not open on it: \(error)",
                               fix: configuration.blePSM == nil ? "see Hardware/Bluetooth.md" : "another program may hold PSM \(settings.psm): choose another --ble-psm")
        }
        return DoctorCheck(area: "ble", name: "adapter", status: .ok,
                           detail: "\(controller): powered, LE on; an L2CAP LE listener opens on it\(adapter == nil ? " (the lowest-numbered: --ble-adapter picks another)" : "")")
    }

    /// Runs `body` to completion from synchronous code (the doctor runs before any agent does).
    private static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0! }
    }

    private func emulatedRadio(_ directory: String) -> DoctorCheck {
        // The longest socket path the radio makes: DIR/peers/<32 hex digits>.sock.
        let longest = directory + "/peers/" + String(repeating: "0", count: 32) + ".sock"
        guard (try? UnixSocketPath(longest)) != nil else {
            return DoctorCheck(area: "ble", name: "emulated radio", status: .failure,
                               detail: "\(directory) is too long: socket paths under it would not fit sun_path (\(UnixSocketPath.maximumBytes) bytes)",
                               fix: "choose a directory of at most 63 bytes, such as /tmp/arcus-radio")
        }
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory)
        let parent = (directory as NSString).deletingLastPathComponent
        guard exists ? (isDirectory.boolValue && access(directory, W_OK) == 0) : access(parent.isEmpty ? "." : parent, W_OK) == 0 else {
            return DoctorCheck(area: "ble", name: "emulated radio", status: .failure, detail: "\(directory) is not a writable directory",
                               fix: "give --ble-emulated a directory every emulated peer on this machine can write")
        }
        return DoctorCheck(area: "ble", name: "emulated radio", status: .ok, detail: "\(directory): AF_UNIX sockets, no radio needed")
    }

    /// Whether a process of this name runs (by /proc/*/comm).
    static func processRuns(_ name: String) -> Bool {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.contains { entry in
            guard entry.allSatisfy(\.isNumber) else { return false }
            return (try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }
}
