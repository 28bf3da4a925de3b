/// A `LANTransport` could not listen where it was told to.
public struct LANListenError: Error, Sendable, Hashable, CustomStringConvertible {
    public let address: LANAddress
    /// What the system said.
    public let reason: String

    public var description: String {
        "cannot listen for LAN peers on \(address): \(reason); choose another address or port, or stop what holds it"
    }
}
