/// Which of the machine's Bluetooth controllers a peer uses: by the kernel's index ("hci1") or
/// by its address ("AA:BB:CC:DD:EE:FF"). Each agent on a host with several controllers takes
/// its own: two on one controller would share its one discovery and its adverts.
public enum BluetoothAdapter: Sendable, Hashable, CustomStringConvertible {
    case index(UInt16)
    case address(L2CAPAddress)

    /// Parses "hci1" or "AA:BB:CC:DD:EE:FF"; nil for anything else.
    public init?(_ text: String) {
        if text.hasPrefix("hci"), let index = UInt16(text.dropFirst(3)) {
            self = .index(index)
        } else if let address = L2CAPAddress(text) {
            self = .address(address)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .index(let index): return "hci\(index)"
        case .address(let address): return address.text
        }
    }
}
