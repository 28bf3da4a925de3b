/// The management commands the Bluetooth transport sends (mgmt-api.txt), as packets.
public enum ManagementCommand: Sendable, Hashable {
    /// 0x0003: the controllers the kernel knows.
    case readControllerIndexList
    /// 0x0004: a controller's address, version and settings.
    case readControllerInformation
    /// 0x003A: discover LE devices (public and random addresses) that advertise `uuid`.
    case startServiceDiscovery(uuid: BluetoothUUID)
    /// 0x0024: stop it.
    case stopDiscovery
    /// 0x003D: the advertising instances the controller has, and those taken.
    case readAdvertisingFeatures
    /// 0x003E: advertise `data` as instance `instance`, connectable, with the Flags field managed,
    /// and `scanResponse` to active scanners.
    case addAdvertising(instance: UInt8, data: [UInt8], scanResponse: [UInt8])
    /// 0x003F: stop advertising instance `instance` (0: every instance this socket added).
    case removeAdvertising(instance: UInt8)

    /// LE public and LE random (bits 1 and 2 of Address_Type).
    static let lowEnergyAddressTypes: UInt8 = 0x06
    /// Add Advertising flags: connectable (bit 0), general discoverable (bit 1).
    static let connectableDiscoverable: UInt32 = 0b11
    /// The most advertising data a legacy advert holds once the kernel adds the Flags field.
    public static let maximumAdvertisingData = 31 - 3
    /// A legacy scan response's data: the kernel adds nothing to it.
    public static let maximumScanResponseData = 31

    public var code: UInt16 {
        switch self {
        case .readControllerIndexList: return 0x0003
        case .readControllerInformation: return 0x0004
        case .startServiceDiscovery: return 0x003A
        case .stopDiscovery: return 0x0024
        case .readAdvertisingFeatures: return 0x003D
        case .addAdvertising: return 0x003E
        case .removeAdvertising: return 0x003F
        }
    }

    public func packet(controller: UInt16) -> ManagementPacket {
        var parameters: [UInt8] = []
        switch self {
        case .readControllerIndexList:
            return ManagementPacket(code: code, controller: ManagementPacket.nonController)
        case .readControllerInformation, .readAdvertisingFeatures:
            break
        case .startServiceDiscovery(let uuid):
            parameters.append(Self.lowEnergyAddressTypes)
            parameters.append(127)  // RSSI threshold 127: report every device, however faint
            parameters.appendLittleEndian(UInt16(1))
            parameters += uuid.littleEndianBytes
        case .stopDiscovery:
            parameters.append(Self.lowEnergyAddressTypes)
        case .addAdvertising(let instance, let data, let scanResponse):
            precondition(data.count <= Self.maximumAdvertisingData, "advertising data over \(Self.maximumAdvertisingData) bytes")
            precondition(scanResponse.count <= Self.maximumScanResponseData, "a scan response over \(Self.maximumScanResponseData) bytes")
            parameters.append(instance)
            parameters.appendLittleEndian(Self.connectableDiscoverable)
            parameters.appendLittleEndian(UInt16(0))  // duration: the default
            parameters.appendLittleEndian(UInt16(0))  // timeout: none
            parameters.append(UInt8(data.count))
            parameters.append(UInt8(scanResponse.count))
            parameters += data + scanResponse
        case .removeAdvertising(let instance):
            parameters.append(instance)
        }
        return ManagementPacket(code: code, controller: controller, parameters: parameters)
    }
}
