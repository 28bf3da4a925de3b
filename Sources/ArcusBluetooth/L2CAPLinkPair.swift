import Foundation

/// Two `SeqPacketLink`s joined by a real L2CAP LE credit-based channel between two of this
/// machine's controllers, opened the way the transport opens its own (`l2capListener`,
/// `l2capConnection`): the listener on `server`, the dialler on `client`. For tests on the
/// kernel's Bluetooth stack (virtual controllers in a VM: Tools/test-bluetooth.sh); the server's
/// controller must be advertising connectable, as a peer would be.
public enum L2CAPLinkPair {
    public static func make(
        server: L2CAPAddress, client: L2CAPAddress, receiveMTU: UInt16 = UInt16(EmulatedLinkPair.defaultMTU),
        security: BluetoothSecurityLevel = .low, name: String = "l2cap"
    ) async throws -> (SeqPacketLink, SeqPacketLink) {
        let listener = try SeqPacketSocket.l2capListener(on: server, receiveMTU: receiveMTU, security: security)
        defer { listener.close() }
        let target = try { () throws -> L2CAPAddress in
            var target = server
            target.psm = try listener.boundL2CAPAddress().psm
            return target
        }()

        // accept and connect block: each on a thread of its own, off the cooperative pool. The
        // kernel gives up a connect after 40 s (its L2CAP connection timeout); accept waits as
        // long, so that a channel that never comes fails the pair instead of hanging it. Either
        // end that came up alone is closed.
        async let accepted = onThread { () throws -> SeqPacketSocket in
            guard listener.waitForReadable(milliseconds: 45_000) else { throw L2CAPLinkPairError.noChannelAccepted(within: .seconds(45)) }
            return try listener.accept()
        }
        async let dialled = onThread { try SeqPacketSocket.l2capConnection(from: client, to: target, receiveMTU: receiveMTU, security: security) }
        let a: SeqPacketSocket, b: SeqPacketSocket
        do {
            a = try await accepted
        } catch {
            (try? await dialled)?.close()
            throw error
        }
        do {
            b = try await dialled
        } catch {
            a.close()
            throw error
        }
        return (
            try SeqPacketLink(socket: a, mtu: try a.sendMTU(), description: "bluetooth \(name) \(server.text) <- \(client.text)"),
            try SeqPacketLink(socket: b, mtu: try b.sendMTU(), description: "bluetooth \(name) \(client.text) -> \(server.text)")
        )
    }

    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

public enum L2CAPLinkPairError: Error, Sendable, Hashable {
    case noChannelAccepted(within: Duration)
}
