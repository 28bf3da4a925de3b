import ArcusBluetooth
import ArcusMesh

/// The emulated Bluetooth channel's first packet (`LinkHello.decode(_:)` in ArcusBluetooth):
/// what a dialler says before the handshake. A hello that decodes encodes to its bytes.
enum BluetoothHelloTarget {
    static let target = FuzzTarget(name: "ble-hello", entryPoint: "ArcusBluetooth: LinkHello.decode(_:)", run: run, seeds: seeds)

    static func run(_ bytes: [UInt8]) {
        guard let peer = ArcusBluetooth.LinkHello.decode(bytes) else { return }
        FuzzCheck.expect(ArcusBluetooth.LinkHello.encode(peer) == bytes, "a Bluetooth hello does not encode to its bytes")
        _ = ArcusBluetooth.LinkHello.decode(bytes[...].dropFirst())
    }

    static func seeds() -> [[UInt8]] {
        [ArcusBluetooth.LinkHello.encode(PeerID(bytes: (0..<16).map { UInt8($0 * 3) })!)]
    }
}
