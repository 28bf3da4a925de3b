import ArcusLoopback
import ArcusMesh
import Foundation
import Synchronization

/// Identities, credentials and handshakes shared by the security tests. Identities are made once:
/// the tests are about what the handshake does with them, not about key generation.
enum SecurityFixtures {
    static let alice = PeerIdentity()
    static let bob = PeerIdentity()
    static let secret = MeshSecret.random().secret
    static let otherSecret = MeshSecret.random().secret
    static let authority = MeshAuthority()

    static func sharedSecret(_ identity: PeerIdentity, _ secret: MeshSecret = secret, timeout: Duration = .seconds(10)) -> MeshHandshake {
        MeshHandshake(identity: identity, credential: .sharedSecret(secret), timeout: timeout)
    }

    static func certified(
        _ identity: PeerIdentity, name: String, permissions: CollectionPermissions = .full,
        issuedBy issuer: MeshAuthority = authority, trusting trusted: MeshAuthority = authority, expiresAt: Date? = nil
    ) throws -> MeshHandshake {
        let certificate = try issuer.issue(to: identity.publicKey, name: name, permissions: permissions, expiresAt: expiresAt)
        return MeshHandshake(identity: identity, credential: .certificate(certificate, authority: trusted.publicKey))
    }

    /// Runs both ends of the handshake at once: `a` initiates, `b` responds.
    static func secure(_ a: any Link, _ b: any Link, initiator: MeshHandshake, responder: MeshHandshake) async throws -> (SecureLink, SecureLink) {
        async let initiated = initiator.secure(a, as: .initiator)
        async let responded = responder.secure(b, as: .responder)
        return try await (initiated, responded)
    }

    /// Both ends' outcomes, for handshakes that are meant to fail.
    static func outcomes(
        _ a: any Link, _ b: any Link, initiator: MeshHandshake, responder: MeshHandshake
    ) async -> (initiator: Result<SecureLink, any Error>, responder: Result<SecureLink, any Error>) {
        async let initiated = outcome { try await initiator.secure(a, as: .initiator) }
        async let responded = outcome { try await responder.secure(b, as: .responder) }
        return await (initiated, responded)
    }

    private static func outcome(_ body: () async throws -> SecureLink) async -> Result<SecureLink, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// A connected pair of secure links over a loopback pair, proven with the shared secret.
    static func securePair(_ conditions: LoopbackConditions = .instant) async throws -> (SecureLink, SecureLink) {
        let (a, b) = Loopback.pair(conditions, name: "secure")
        return try await secure(a, b, initiator: sharedSecret(alice), responder: sharedSecret(bob))
    }
}

/// A link that records the frames sent through it and, while `isForwarding` is off, keeps them
/// instead of sending them, so a test can replay, reorder, alter or move them between sessions.
final class FrameTap: Link {
    let link: any Link
    private let state = Mutex((isForwarding: true, frames: [[UInt8]]()))

    init(_ link: any Link) {
        self.link = link
    }

    var kind: LinkKind { link.kind }
    var mtu: Int { link.mtu }
    var description: String { "\(link.description), tapped" }
    var incoming: AsyncStream<[UInt8]> { link.incoming }

    var isForwarding: Bool {
        get { state.withLock { $0.isForwarding } }
        set { state.withLock { $0.isForwarding = newValue } }
    }

    /// Every frame sent so far, forwarded or kept.
    var frames: [[UInt8]] { state.withLock { $0.frames } }

    func send(_ message: [UInt8]) async throws {
        let forwarding = state.withLock { state in
            state.frames.append(message)
            return state.isForwarding
        }
        if forwarding { try await link.send(message) }
    }

    func close() { link.close() }
}
