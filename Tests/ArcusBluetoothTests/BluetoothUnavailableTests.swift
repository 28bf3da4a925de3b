import ArcusBluetooth
import Glibc
import Testing

/// What a user is told when the machine cannot do Bluetooth.
@Suite("Bluetooth unavailable")
struct BluetoothUnavailableTests {
    /// This machine's kernel has no AF_BLUETOOTH (the CI containers neither). Where Bluetooth is
    /// compiled in, the socket opens and there is nothing to check here.
    @Test("opening an L2CAP socket without kernel Bluetooth says so, how to fix it, and how to emulate")
    func noKernelSupport() throws {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), 0)
        if probe >= 0 {
            close(probe)
            print("this kernel has Bluetooth: the EAFNOSUPPORT message is not exercised here")
            return
        }
        #expect(errno == EAFNOSUPPORT, "socket(AF_BLUETOOTH) failed with errno \(errno), not EAFNOSUPPORT")
        let error = try #require(throws: BluetoothUnavailable.self) { _ = try SeqPacketSocket.l2cap() }
        #expect(error == .noKernelSupport)
        let message = error.description
        #expect(message.contains("this kernel has no Bluetooth support"))
        #expect(message.contains("socket(AF_BLUETOOTH) failed with EAFNOSUPPORT"))
        #expect(message.contains("CONFIG_BT"))
        #expect(message.contains("modprobe bluetooth"))
        #expect(message.contains("bluetoothd"))
        #expect(message.contains("--ble-emulated DIR"))
    }

    @Test("permission and adapter errors name the capabilities and the adapter; others stay socket errors")
    func classification() {
        let denied = BluetoothUnavailable(SocketError(.open, errno: EPERM))
        #expect(denied == .notPermitted(SocketError(.open, errno: EPERM)))
        #expect(denied?.description.contains("CAP_NET_ADMIN") == true)
        #expect(denied?.description.contains("CAP_NET_ADMIN") == true)
        #expect(BluetoothUnavailable(SocketError(.bind, errno: EACCES)) != nil)

        let noAdapter = BluetoothUnavailable(SocketError(.connect, errno: EHOSTUNREACH))
        #expect(noAdapter == .noAdapter(SocketError(.connect, errno: EHOSTUNREACH)))
        #expect(noAdapter?.description.contains("no Bluetooth adapter") == true)
        #expect(BluetoothUnavailable(SocketError(.bind, errno: ENODEV)) != nil)

        #expect(BluetoothUnavailable(SocketError(.connect, errno: ECONNREFUSED)) == nil)
        #expect(BluetoothUnavailable(SocketError(.open, errno: EMFILE)) == nil)
    }
}

@Suite("Bluetooth addresses")
struct L2CAPAddressTests {
    @Test("a bdaddr parses from AA:BB:CC:DD:EE:FF and prints back")
    func parses() throws {
        let address = try #require(L2CAPAddress("0a:BB:cc:DD:ee:FF", type: .leRandom, psm: 0x80))
        #expect(address.bytes == [0x0A, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])
        #expect(address.text == "0A:BB:CC:DD:EE:FF")
        #expect(address.type == .leRandom)
        #expect(address.psm == 0x80)
        #expect(L2CAPAddress.dynamicPSMs.contains(address.psm))
    }

    @Test("malformed addresses are refused", arguments: ["", "AA:BB:CC:DD:EE", "AA:BB:CC:DD:EE:FF:00", "AA:BB:CC:DD:EE:GG", "AAA:BB:CC:DD:EE:F", "AA-BB-CC-DD-EE-FF", "AA:BB:CC:DD:EE:"])
    func refusesMalformed(_ text: String) {
        #expect(L2CAPAddress(text) == nil)
    }

    @Test("a socket path over sun_path is refused with a clear error")
    func socketPathLength() throws {
        #expect(UnixSocketPath.maximumBytes == 107)
        _ = try UnixSocketPath("/tmp/" + String(repeating: "a", count: 102))
        let error = try #require(throws: UnixSocketPathTooLong.self) { _ = try UnixSocketPath("/tmp/" + String(repeating: "a", count: 103)) }
        #expect(error.description.contains("108") || error.description.contains("107"))
        #expect(error.description.contains("shorter directory"))
    }
}
