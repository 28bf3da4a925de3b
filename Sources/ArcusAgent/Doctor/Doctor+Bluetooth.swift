import ArcusBluetooth
import Foundation

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
        let adapters = ((try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/bluetooth")) ?? []).filter { $0.hasPrefix("hci") }.sorted()
        checks.append(adapters.isEmpty
            ? DoctorCheck(area: "ble", name: "adapter", status: .failure, detail: "no adapter in /sys/class/bluetooth",
                          fix: "plug in or enable one; `btmgmt info` lists what the kernel sees, `rfkill list` what is blocked")
            : DoctorCheck(area: "ble", name: "adapter", status: .ok, detail: adapters.joined(separator: ", ")))
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
