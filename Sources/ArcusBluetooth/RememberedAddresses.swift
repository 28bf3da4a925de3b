/// The addresses discovery ever announced, to tell a peer that stopped from an address nobody
/// used; the oldest forgotten past `capacity`, since anyone in range can advertise this mesh's
/// prefix from any number of addresses. A forgotten address is only reported as unknown
/// rather than stopped: both refuse the dial.
struct RememberedAddresses {
    let capacity: Int
    private var order: [String] = []
    private var members: Set<String> = []

    init(capacity: Int = 1024) {
        self.capacity = capacity
    }

    mutating func insert(_ address: String) {
        guard members.insert(address).inserted else { return }
        order.append(address)
        if order.count > capacity { members.remove(order.removeFirst()) }
    }

    func contains(_ address: String) -> Bool { members.contains(address) }

    var count: Int { members.count }
}
