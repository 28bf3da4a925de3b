import ArcusLoopback
import ArcusMesh
import Foundation
import Synchronization

/// The mesh handshake (`MeshHandshake.secure(_:as:peer:hint:)`), run for real against a peer the
/// input plays: whatever it sends — fragments, headers, keys, resumption tickets, proofs, sealed
/// frames — the handshake ends with a `SecureLink` or an error, never a crash or a hang.
///
/// Input: one byte, then the peer's link frames (`FuzzMessages`: 2-byte length, bytes). Bit 0 of
/// the byte picks the credential (0 a shared secret, 1 a certificate), bit 1 the role this side
/// plays (0 it responds, 1 it initiates). The frames are all this side will ever receive: the
/// link then closes, so every run ends at once. (The keys are fresh every run, as in the mesh:
/// past the first message the peer cannot know them, so a run goes as deep as the handshake
/// lets a stranger.)
enum HandshakeTarget {
    static let target = FuzzTarget(
        name: "handshake", entryPoint: "ArcusMesh: MeshHandshake.secure(_:as:peer:hint:), both roles, both credentials", run: run, seeds: seeds
    )

    // A fixed random-looking secret: a phrase would be refused as too easy to guess.
    static let secret = try! MeshSecret(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ 41) })
    static var authority: MeshAuthority { CertificateTarget.authority }
    static let local = PeerIdentity()
    static let certificate = try! authority.issue(to: local.publicKey, name: "fuzzed", permissions: .full)

    static func handshake(certificate useCertificate: Bool, identity: PeerIdentity = local, certificate issued: PeerCertificate? = nil) -> MeshHandshake {
        let credential: MeshCredential = useCertificate
            ? .certificate(issued ?? certificate, authority: authority.publicKey) : .sharedSecret(secret)
        return MeshHandshake(identity: identity, credential: credential, timeout: .seconds(5))
    }

    static func run(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let frames = FuzzMessages.split(bytes.dropFirst())
        let link = ScriptedLink(frames: frames)
        let handshake = handshake(certificate: mode & 1 != 0)
        let role: HandshakeRole = mode & 2 != 0 ? .initiator : .responder
        blockUntilDone {
            if let secured = try? await handshake.secure(link, as: role) {
                // A stranger cannot get here; if a run does, the link must still refuse what follows.
                var messages = secured.incoming.makeAsyncIterator()
                while await messages.next() != nil {}
            }
        }
    }

    /// Real transcripts: what an initiator and a responder of each credential send another.
    static func seeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for useCertificate in [false, true] {
            let peer = PeerIdentity()
            let peerCertificate = try! authority.issue(to: peer.publicKey, name: "peer", permissions: .full)
            let (a, b) = Loopback.pair(.instant, name: "seed")
            let initiatorLink = RecordingLink(a), responderLink = RecordingLink(b)
            let initiator = handshake(certificate: useCertificate, identity: peer, certificate: peerCertificate)
            let responder = handshake(certificate: useCertificate)
            blockUntilDone {
                async let one = try? initiator.secure(initiatorLink, as: .initiator)
                async let two = try? responder.secure(responderLink, as: .responder)
                _ = await (one, two)
            }
            let mode: UInt8 = useCertificate ? 1 : 0
            // This side responds to the initiator's frames; or initiates, and gets the responder's.
            seeds.append([mode] + FuzzMessages.join(initiatorLink.sent))
            seeds.append([mode | 2] + FuzzMessages.join(responderLink.sent))
            // Only the first message, and a resumption with a ticket nobody holds.
            seeds.append([mode] + FuzzMessages.join(Array(initiatorLink.sent.prefix(1))))
            let resume = [0x01, 0x01, 0x80 | (useCertificate ? 2 : 1)] + [UInt8](repeating: 0xAB, count: 12) + Array("hint".utf8)
            seeds.append([mode] + FuzzMessages.join([resume] + initiatorLink.sent))
        }
        return seeds
    }
}

/// A link that delivers a fixed list of frames and then closes; what is sent on it goes nowhere.
final class ScriptedLink: Link {
    let incoming: AsyncStream<[UInt8]>
    private let closed = Mutex(false)
    private let input: AsyncStream<[UInt8]>.Continuation

    init(frames: [[UInt8]]) {
        (incoming, input) = AsyncStream.makeStream()
        for frame in frames { input.yield(frame) }
        input.finish()
    }

    var kind: LinkKind { .loopback }
    var mtu: Int { 64 << 10 }
    var description: String { "scripted link" }
    var metrics: LinkMetrics { LinkMetrics(cost: .free) }

    func send(_ message: [UInt8]) async throws {
        guard message.count <= mtu else { throw LinkError.messageTooLarge(size: message.count, mtu: mtu) }
        if closed.withLock({ $0 }) { throw LinkError.closed }
    }

    func close() {
        closed.withLock { $0 = true }
        input.finish()
    }
}

/// A link that passes everything on and keeps a copy of what was sent through it.
final class RecordingLink: Link {
    let link: any Link
    private let frames = Mutex<[[UInt8]]>([])

    init(_ link: any Link) { self.link = link }

    var kind: LinkKind { link.kind }
    var mtu: Int { link.mtu }
    var description: String { "\(link.description), recorded" }
    var metrics: LinkMetrics { link.metrics }
    var incoming: AsyncStream<[UInt8]> { link.incoming }
    var sent: [[UInt8]] { frames.withLock { $0 } }

    func send(_ message: [UInt8]) async throws {
        frames.withLock { $0.append(message) }
        try await link.send(message)
    }

    func close() { link.close() }
}

/// Runs `body` on the concurrency pool and blocks this (non-pool) thread until it is done: the
/// fuzzer calls targets synchronously.
func blockUntilDone(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}
