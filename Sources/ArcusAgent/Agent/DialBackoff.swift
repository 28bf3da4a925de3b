/// How long to wait before dialling a peer again: from half a second, doubling after each
/// failure up to 30 s, with up to a fifth added at random so that agents that lost a peer
/// together do not all dial it in the same instant.
struct DialBackoff {
    static let first: Duration = .milliseconds(500)
    static let longest: Duration = .seconds(30)
    /// How often a dialler looks whether the peer's session still has a link of its kind.
    static let linkCheckInterval: Duration = .milliseconds(500)

    private var current = first

    mutating func next() -> Duration {
        let wait = current
        current = min(current * 2, Self.longest)
        return wait + wait * Double.random(in: 0..<0.2)
    }

    mutating func reset() { current = Self.first }
}
