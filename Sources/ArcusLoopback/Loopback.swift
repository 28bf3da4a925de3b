import ArcusMesh

/// In-process links, for tests and the demo: the loopback twin of every transport.
public enum Loopback {
    /// Two connected links: what one sends, the other receives, as `conditions` say. `kind` is
    /// the transport they stand in for (a session prefers LAN over Bluetooth), loopback by default.
    public static func pair(
        _ conditions: LoopbackConditions = .instant, name: String = "loopback", kind: LinkKind = .loopback
    ) -> (LoopbackLink, LoopbackLink) {
        pair(conditions, name: name, kind: kind, random: SystemRandomNumberGenerator())
    }

    /// Two connected links whose losses are drawn from `random`, so that a test can replay them
    /// from a seed.
    public static func pair(
        _ conditions: LoopbackConditions,
        name: String = "loopback",
        kind: LinkKind = .loopback,
        random: some RandomNumberGenerator & Sendable
    ) -> (LoopbackLink, LoopbackLink) {
        let connection = LoopbackConnection(conditions: conditions, random: random)
        return (
            LoopbackLink(connection: connection, side: .a, name: name, kind: kind),
            LoopbackLink(connection: connection, side: .b, name: name, kind: kind)
        )
    }
}
