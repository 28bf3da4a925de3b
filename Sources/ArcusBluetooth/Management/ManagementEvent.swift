/// An event from the management socket (mgmt-api.txt, "Events"), the ones the transport reads
/// decoded and bounds-checked; the rest kept as their code.
public enum ManagementEvent: Sendable, Hashable {
    /// 0x0001: a command finished; `parameters` are its return parameters.
    case commandComplete(command: UInt16, status: ManagementStatus, parameters: [UInt8])
    /// 0x0002: a command failed early (or is pending, with status success).
    case commandStatus(command: UInt16, status: ManagementStatus)
    /// 0x000B: a device connected to the controller, or the controller to it (any program's).
    case deviceConnected
    /// 0x0006: a controller's current settings changed (bit 0: powered).
    case newSettings(UInt32)
    /// 0x0004, 0x0005: a controller came or went.
    case indexAdded, indexRemoved
    /// 0x0012: a device advertised, during discovery.
    case deviceFound(DeviceFound)
    /// 0x0013: discovery started or stopped (it may stop on its own: start it again).
    case discovering(Bool)
    /// 0x0024: another program (bluetoothd clears every instance when it starts) removed an
    /// advertising instance; the socket that removed it is not told.
    case advertisingRemoved(instance: UInt8)
    case other(code: UInt16)

    public struct DeviceFound: Sendable, Hashable {
        /// The 6 address bytes as the kernel gives them (least significant first).
        public var address: [UInt8]
        /// 1: LE public, 2: LE random.
        public var addressType: UInt8
        /// dBm; nil when the controller does not say (127).
        public var rssi: Int8?
        public var flags: UInt32
        /// The advertising data and scan response, as AD structures.
        public var advertisingData: [UInt8]
    }

    public init(_ packet: ManagementPacket) throws(ManagementError) {
        var reader = LittleEndianReader(packet.parameters)
        switch packet.code {
        case 0x0001:
            self = .commandComplete(command: try reader.uint16(), status: ManagementStatus(code: try reader.uint8()), parameters: reader.rest())
        case 0x0002:
            self = .commandStatus(command: try reader.uint16(), status: ManagementStatus(code: try reader.uint8()))
        case 0x0004: self = .indexAdded
        case 0x0005: self = .indexRemoved
        case 0x0006: self = .newSettings(try reader.uint32())
        case 0x000B: self = .deviceConnected
        case 0x0012:
            let address = try reader.bytes(6), type = try reader.uint8(), rssi = Int8(bitPattern: try reader.uint8())
            let flags = try reader.uint32(), length = Int(try reader.uint16())
            let data = try reader.bytes(length)
            guard reader.remaining == 0 else { throw .malformed("a Device Found event has \(reader.remaining) bytes after its data") }
            self = .deviceFound(DeviceFound(address: address, addressType: type, rssi: rssi == 127 ? nil : rssi, flags: flags, advertisingData: data))
        case 0x0013:
            _ = try reader.uint8()
            self = .discovering(try reader.uint8() != 0)
        case 0x0024:
            self = .advertisingRemoved(instance: try reader.uint8())
        default:
            self = .other(code: packet.code)
        }
    }
}
