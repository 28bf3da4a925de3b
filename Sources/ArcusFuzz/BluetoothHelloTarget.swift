import ArcusBluetooth
import ArcusMesh

/// A Bluetooth channel's first packet (`LinkHello.decode(_:)` in ArcusBluetooth): what a
/// dialler says before the handshake. A hello that decodes encodes to its bytes.
enum BluetoothHelloTarget {
    static let target = FuzzTarget(name: "ble-hello", entryPoint: "ArcusBluetooth: LinkHello.decode(_:)", run: run, seeds: seeds)

    static func run(_ bytes: [UInt8]) {
        guard let hello = ArcusBluetooth.LinkHello.decode(bytes) else { return }
        FuzzCheck.expect(hello.encoded == bytes, "a Bluetooth hello does not encode to its bytes")
        _ = ArcusBluetooth.LinkHello.decode(bytes[...].dropFirst())
    }

    static func seeds() -> [[UInt8]] {
        let peer = PeerID(bytes: (0..<16).map { UInt8($0 * 3) })!
        return [ArcusBluetooth.LinkHello(peer: peer).encoded, ArcusBluetooth.LinkHello(peer: peer, psm: 0x81).encoded]
    }
}
