@testable import ArcusMesh
import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusBluetooth

/// The management-socket codec against BlueZ's doc/mgmt-api.txt, byte for byte, and the Arcus
/// advert in its 28 bytes. Untrusted input (events, advertising data) never crashes the parser.
@Suite("Bluetooth management codec")
struct ManagementCodecTests {
    static let peer = PeerID(bytes: (1...16).map { UInt8($0) })!
    static let meshHash = "a1b2c3d4e5f60718"

    @Test("commands encode as mgmt-api.txt lays them out: code, index, length, little-endian parameters")
    func commands() {
        #expect(ManagementCommand.readControllerIndexList.packet(controller: 0).encoded == [0x03, 0x00, 0xFF, 0xFF, 0x00, 0x00])
        #expect(ManagementCommand.stopDiscovery.packet(controller: 1).encoded == [0x24, 0x00, 0x01, 0x00, 0x01, 0x00, 0x06])
        let discovery = ManagementCommand.startServiceDiscovery(uuid: ArcusAdvertisement.serviceUUID).packet(controller: 0).encoded
        #expect(Array(discovery.prefix(10)) == [0x3A, 0x00, 0x00, 0x00, 20, 0x00, 0x06, 127, 0x01, 0x00])
        #expect(Array(discovery.suffix(16)) == ArcusAdvertisement.serviceUUID.bytes.reversed())

        let advert = ArcusAdvertisement(psm: 0x81, peer: Self.peer, meshHash: Self.meshHash).advertisingData
        let response = ArcusAdvertisement.scanResponseData
        let add = ManagementCommand.addAdvertising(instance: 1, data: advert, scanResponse: response).packet(controller: 0).encoded
        #expect(Array(add.prefix(17)) == [0x3E, 0x00, 0x00, 0x00, UInt8(11 + advert.count + response.count), 0x00, 1, 0x03, 0, 0, 0, 0, 0, 0, 0, UInt8(advert.count), UInt8(response.count)])
        #expect(Array(add.dropFirst(17)) == advert + response)
        // The scan response: one Complete List of 128-bit Service Class UUIDs (0x07) holding the
        // Arcus UUID, little-endian, which the kernel's UUID filter matches (Service Data it does not).
        #expect(response == [17, 0x07] + ArcusAdvertisement.serviceUUID.bytes.reversed())
        #expect(ManagementCommand.readAdvertisingFeatures.packet(controller: 2).encoded == [0x3D, 0x00, 0x02, 0x00, 0x00, 0x00])
        #expect(ManagementCommand.removeAdvertising(instance: 1).packet(controller: 0).encoded == [0x3F, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])
    }

    @Test("the Arcus advert fits a legacy advert with the kernel's Flags, and reads back from a Device Found event")
    func advertRoundTrip() throws {
        let advert = ArcusAdvertisement(psm: 0x81, peer: Self.peer, meshHash: Self.meshHash)
        #expect(advert.advertisingData.count == ManagementCommand.maximumAdvertisingData)
        // As a scanner sees it: the Flags structure first, then ours, then a name.
        let eir: [UInt8] = [0x02, 0x01, 0x06] + advert.advertisingData + [0x05, 0x09] + Array("pump".utf8)
        var parameters: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x01, 0xC4, 0, 0, 0, 0]
        parameters.appendLittleEndian(UInt16(eir.count))
        parameters += eir
        let packet = try ManagementPacket(parsing: ManagementPacket(code: 0x0012, controller: 0, parameters: parameters).encoded)
        guard case .deviceFound(let found) = try ManagementEvent(packet) else { Issue.record("not a Device Found event"); return }
        #expect(found.address == [0x11, 0x22, 0x33, 0x44, 0x55, 0x66] && found.addressType == 1 && found.rssi == -60)
        let read = try #require(ArcusAdvertisement(advertisingData: found.advertisingData))
        #expect(read == advert && read.psm == 0x81 && read.peerPrefix == [1, 2, 3, 4])
        #expect(read.belongs(toMesh: Self.meshHash) && !read.belongs(toMesh: "ffffffff00000000"))
    }

    @Test("command complete and status events carry the command and its status, with what to do")
    func completions() throws {
        let complete = try ManagementEvent(ManagementPacket(code: 0x0001, controller: 0, parameters: [0x3E, 0x00, 0x00, 0x01]))
        #expect(complete == .commandComplete(command: 0x003E, status: .success, parameters: [0x01]))
        let status = try ManagementEvent(ManagementPacket(code: 0x0002, controller: 0, parameters: [0x3A, 0x00, 0x14]))
        #expect(status == .commandStatus(command: 0x003A, status: .permissionDenied))
        #expect(ManagementStatus.permissionDenied.description.contains("CAP_NET_ADMIN"))
        #expect(ManagementStatus.notPowered.description.contains("power on"))
    }

    @Test("truncated packets, lengths past the end and AD structures past the end are errors, not crashes")
    func hostile() throws {
        #expect(throws: ManagementError.self) { try ManagementPacket(parsing: [0x12, 0x00, 0x00]) }
        #expect(throws: ManagementError.self) { try ManagementPacket(parsing: [0x12, 0x00, 0x00, 0x00, 0x10, 0x00, 0x01]) }
        // A Device Found event whose EIR length claims more than it carries.
        let lying = ManagementPacket(code: 0x0012, controller: 0, parameters: [1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 0, 0, 0xFF, 0x00, 0x02])
        #expect(throws: ManagementError.self) { try ManagementEvent(lying) }
        // Advertising Removed without its instance, New Settings without all its bits.
        #expect(throws: ManagementError.self) { try ManagementEvent(ManagementPacket(code: 0x0024, controller: 0, parameters: [])) }
        #expect(throws: ManagementError.self) { try ManagementEvent(ManagementPacket(code: 0x0006, controller: 0, parameters: [1, 2])) }
        #expect(throws: ManagementError.self) { try AdvertisingData(parsing: [0x05, 0x21, 0x00]) }
        #expect(ArcusAdvertisement(advertisingData: [0x05, 0x21, 0x00]) == nil)
        #expect(try AdvertisingData(parsing: [0x02, 0x01, 0x06, 0x00, 0x00]).structures == [.init(type: 0x01, data: [0x06])])
    }

    @Test("random bytes never crash the event or advertising-data parsers", arguments: SeededRandom.seeds(count: 2, test: "mgmt-hostile"))
    func randomBytes(seed: UInt64) {
        print("mgmt-hostile seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if let packet = try? ManagementPacket(parsing: bytes) { _ = try? ManagementEvent(packet) }
            _ = try? ManagementEvent(ManagementPacket(code: [0x0001, 0x0002, 0x0006, 0x0012, 0x0013, 0x0024][Int.random(in: 0..<6, using: &rng)], controller: 0, parameters: bytes))
            _ = ArcusAdvertisement(advertisingData: bytes)
        }
    }
}
