import ArcusMesh
import Foundation

/// What an Arcus peer advertises over Bluetooth LE, in one legacy advert (31 bytes, 28 once the
/// kernel adds the Flags field): one Service Data structure for the Arcus service UUID holding
///
///     version (1) | L2CAP PSM (1, 0x80–0xFF) | peer id prefix (4) | mesh hash prefix (4)
///
/// 2 + 16 + 10 = 28 bytes. The prefixes let a scanner skip other meshes and break dial ties
/// (the lower prefix dials); the handshake proves the whole identity.
public struct ArcusAdvertisement: Sendable, Hashable {
    /// The Arcus service: a random UUID of its own.
    public static let serviceUUID = BluetoothUUID(UUID(uuidString: "6C1E9A2B-4F3D-4B7E-9A15-A7C3D0E8F241")!)
    public static let version: UInt8 = 1
    static let dataSize = 10

    public var psm: UInt8
    public var peerPrefix: [UInt8]
    public var meshPrefix: [UInt8]

    public init(psm: UInt8, peer: PeerID, meshHash: String) {
        self.init(psm: psm, peerPrefix: Array(peer.bytes.prefix(4)), meshPrefix: Self.prefix(ofHash: meshHash))
    }

    init(psm: UInt8, peerPrefix: [UInt8], meshPrefix: [UInt8]) {
        precondition(peerPrefix.count == 4 && meshPrefix.count == 4)
        self.psm = psm
        self.peerPrefix = peerPrefix
        self.meshPrefix = meshPrefix
    }

    /// The first 4 bytes of a mesh hash written in hex (`MeshCredential.meshHash`); zeros if it is not hex.
    static func prefix(ofHash hash: String) -> [UInt8] {
        let digits = Array(hash.utf8.prefix(8))
        var bytes: [UInt8] = []
        for pair in stride(from: 0, to: digits.count - 1, by: 2) {
            guard let byte = UInt8(String(decoding: digits[pair...pair + 1], as: UTF8.self), radix: 16) else { return [0, 0, 0, 0] }
            bytes.append(byte)
        }
        return bytes.count == 4 ? bytes : [0, 0, 0, 0]
    }

    /// The advertising data to hand Add Advertising.
    public var advertisingData: [UInt8] {
        let data = Self.serviceUUID.littleEndianBytes + [Self.version, psm] + peerPrefix + meshPrefix
        return AdvertisingData([.init(type: AdvertisingData.serviceData128, data: data)]).encoded
    }

    /// The scan response: the Arcus service UUID as a complete list of 128-bit UUIDs. The
    /// kernel's UUID-filtered discovery matches only UUID lists, never Service Data; the advert
    /// itself has no room left for one.
    public static var scanResponseData: [UInt8] {
        AdvertisingData([.init(type: AdvertisingData.completeUUIDs128, data: serviceUUID.littleEndianBytes)]).encoded
    }

    /// Finds an Arcus advert in a device's advertising data; nil when there is none, or one of a
    /// version or PSM this peer does not speak.
    public init?(advertisingData bytes: [UInt8]) {
        guard let data = try? AdvertisingData(parsing: bytes).serviceData(for: Self.serviceUUID),
              data.count >= Self.dataSize, data[0] == Self.version, data[1] >= 0x80 else { return nil }
        self.init(psm: data[1], peerPrefix: Array(data[2..<6]), meshPrefix: Array(data[6..<10]))
    }

    /// Whether the advert is of the mesh whose hash is `meshHash`.
    public func belongs(toMesh meshHash: String) -> Bool {
        meshPrefix == Self.prefix(ofHash: meshHash)
    }
}
