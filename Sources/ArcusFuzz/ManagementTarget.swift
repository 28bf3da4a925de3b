import ArcusBluetooth
import ArcusMesh

/// The kernel's Bluetooth management socket (`ManagementPacket(parsing:)`, `ManagementEvent(_:)`,
/// `AdvertisingData(parsing:)`, `ArcusAdvertisement(advertisingData:)`): events carry the
/// advertising data of any device in radio range. Packets and advertising data that parse encode
/// to their bytes.
enum ManagementTarget {
    static let target = FuzzTarget(
        name: "mgmt", entryPoint: "ArcusBluetooth: ManagementPacket(parsing:), ManagementEvent(_:), AdvertisingData(parsing:), ArcusAdvertisement(advertisingData:)",
        run: run, seeds: seeds
    )

    static func run(_ bytes: [UInt8]) {
        advertisingData(bytes)
        guard let packet = try? ManagementPacket(parsing: bytes) else { return }
        FuzzCheck.expect(packet.encoded == bytes, "a management packet does not encode to its bytes")
        guard let event = try? ManagementEvent(packet) else { return }
        if case .deviceFound(let device) = event {
            FuzzCheck.expect(device.address.count == 6, "a device address of \(device.address.count) bytes")
            advertisingData(device.advertisingData)
        }
    }

    static func advertisingData(_ bytes: [UInt8]) {
        if let data = try? AdvertisingData(parsing: bytes) {
            FuzzCheck.expect((try? AdvertisingData(parsing: data.encoded)) == data, "advertising data changed in a round trip")
        }
        if let advert = ArcusAdvertisement(advertisingData: bytes) {
            _ = advert.belongs(toMesh: "0123abcd")
            FuzzCheck.expect(ArcusAdvertisement(advertisingData: advert.advertisingData) == advert, "an Arcus advert changed in a round trip")
        }
    }

    static func seeds() -> [[UInt8]] {
        let advert = ArcusAdvertisement(psm: 0x81, peer: PeerID(bytes: (0..<16).map { UInt8($0) })!, meshHash: "0123abcd0123abcd").advertisingData
        let flags: [UInt8] = [2, 0x01, 0x06]
        var found: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 1, 0xC4, 0, 0, 0, 0]
        let data = flags + advert
        found += [UInt8(data.count), 0] + data
        let events: [ManagementPacket] = [
            ManagementPacket(code: 0x0012, controller: 0, parameters: found),
            ManagementPacket(code: 0x0001, controller: 0, parameters: [0x29, 0x00, 0x00, 0x01, 0x02]),
            ManagementPacket(code: 0x0002, controller: 0, parameters: [0x41, 0x00, 0x0C]),
            ManagementPacket(code: 0x0004, controller: 1),
            ManagementPacket(code: 0x0005, controller: 1),
            ManagementPacket(code: 0x0013, controller: 0, parameters: [0x06, 0x01]),
        ]
        return events.map(\.encoded) + [advert, data]
    }
}
