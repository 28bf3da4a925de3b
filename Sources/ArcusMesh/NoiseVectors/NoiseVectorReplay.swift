import Crypto

/// Runs one test vector through the code the mesh runs: the handshake messages through
/// `NoiseHandshakeState`, with the vector's keys (ephemeral ones included) injected, and the
/// transport messages through a pair of `SecureLink`s keyed by the state's `split()`, which seal
/// and open them as session frames, counter for nonce. Each side writes its messages, which must
/// equal the published ciphertexts byte for byte, and reads the other side's published
/// ciphertexts, which must open to the published payloads.
struct NoiseVectorReplay {
    let vector: NoiseTestVector

    /// Nil when every message, and the handshake hash if the vector gives one, match; otherwise
    /// the first mismatch, as a line naming the vector and the message.
    func run() async -> String? {
        do {
            try await replay()
            return nil
        } catch {
            return "\(vector.title): \(error)"
        }
    }

    private struct Mismatch: Error, CustomStringConvertible {
        var description: String
    }

    private func replay() async throws(Mismatch) {
        var initiator = state(vector.initiator, as: .initiator)
        var responder = state(vector.responder, as: .responder)
        let handshakeCount = vector.pattern.messages.count

        for (index, message) in vector.messages.prefix(handshakeCount).enumerated() {
            let place = self.place(index)
            do {
                let written = index % 2 == 0
                    ? try initiator.writeMessage(payload: message.payload) : try responder.writeMessage(payload: message.payload)
                try compare(written, message.ciphertext, place: place)
                let read = index % 2 == 0 ? try responder.readMessage(message.ciphertext) : try initiator.readMessage(message.ciphertext)
                guard read == message.payload else {
                    throw Mismatch(description: "\(place): the published ciphertext opens to \(excerpt(read, from: 0)), not the payload")
                }
            } catch let error as NoiseHandshakeError {
                throw Mismatch(description: "\(place): \(error)")
            } catch let mismatch as Mismatch {
                throw mismatch
            } catch {
                throw Mismatch(description: "\(place): \(error)")
            }
        }

        guard initiator.handshakeHash == responder.handshakeHash else {
            throw Mismatch(description: "the two sides' handshake hashes differ")
        }
        if let expected = vector.handshakeHash, expected != initiator.handshakeHash {
            throw Mismatch(description: "the handshake hash is \(Hex.encode(initiator.handshakeHash)), not \(Hex.encode(expected))")
        }

        try await replayTransport(initiator: initiator, responder: responder, from: handshakeCount)
    }

    /// The messages after the handshake, through a `SecureLink` at each end.
    private func replayTransport(initiator: NoiseHandshakeState, responder: NoiseHandshakeState, from first: Int) async throws(Mismatch) {
        guard vector.messages.count > first else { return }
        let initiatorEnd = await SessionEnd(state: initiator)
        let responderEnd = await SessionEnd(state: responder)
        defer {
            initiatorEnd.secure.close()
            responderEnd.secure.close()
        }
        for index in first..<vector.messages.count {
            let message = vector.messages[index]
            let (sender, receiver) = index % 2 == 0 ? (initiatorEnd, responderEnd) : (responderEnd, initiatorEnd)
            let place = self.place(index)
            do {
                try await sender.secure.send(message.payload)
            } catch {
                throw Mismatch(description: "\(place): sealing failed: \(error)")
            }
            try compare(sender.transcript.takeSent(), message.ciphertext, place: place)
            receiver.transcript.deliver(message.ciphertext)
            guard let opened = await receiver.next() else {
                let why = receiver.secure.securityViolation.map { "\($0)" } ?? "the link closed"
                throw Mismatch(description: "\(place): the published ciphertext did not open: \(why)")
            }
            guard opened == message.payload else {
                throw Mismatch(description: "\(place): the published ciphertext opens to \(excerpt(opened, from: 0)), not the payload")
            }
        }
    }

    /// One end of the transport phase: a `SecureLink` over a `TranscriptLink`, as `MeshHandshake`
    /// makes one after a handshake.
    private final class SessionEnd {
        let transcript = TranscriptLink(mtu: 1 << 20)
        let secure: SecureLink
        private var messages: AsyncStream<[UInt8]>.Iterator

        init(state: NoiseHandshakeState) async {
            let (sending, receiving) = state.split()
            let inbound = InboundFrames(link: transcript)
            await inbound.startSession(receivingWith: receiving)
            // The vector's peers have keys to agree with, not to sign with: a throwaway signing key stands in.
            let signingKey = Curve25519.Signing.PrivateKey().publicKey
            let remote = state.remoteStatic ?? Curve25519.KeyAgreement.PrivateKey().publicKey
            let peer = AuthenticatedPeer(
                publicKey: PeerPublicKey(signingKey: signingKey, agreementKey: remote), name: "test vector", permissions: .full, certificate: nil
            )
            secure = SecureLink(link: transcript, peer: peer, inbound: inbound, sending: sending)
            messages = secure.incoming.makeAsyncIterator()
        }

        func next() async -> [UInt8]? {
            await messages.next()
        }
    }

    // MARK: Reports

    private func state(_ side: NoiseTestVector.Side, as role: HandshakeRole) -> NoiseHandshakeState {
        // X25519 takes any 32 bytes as a private key (it clamps them), and the vector was checked to hold 32.
        let staticKey = try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: side.staticKey)
        let ephemeralKey = try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: side.ephemeralKey)
        return NoiseHandshakeState(
            pattern: vector.pattern, role: role, prologue: side.prologue, localStatic: staticKey,
            presharedKeys: side.presharedKeys, ephemeral: ephemeralKey
        )
    }

    /// "messages[3] (transport, responder to initiator)".
    private func place(_ index: Int) -> String {
        let phase = index < vector.pattern.messages.count ? "handshake" : "transport"
        let direction = index % 2 == 0 ? "initiator to responder" : "responder to initiator"
        return "messages[\(index)] (\(phase), \(direction))"
    }

    private func compare(_ written: [[UInt8]], _ expected: [UInt8], place: String) throws(Mismatch) {
        guard written.count == 1 else {
            throw Mismatch(description: "\(place): \(written.count) frames went out for one message")
        }
        try compare(written[0], expected, place: place)
    }

    private func compare(_ written: [UInt8], _ expected: [UInt8], place: String) throws(Mismatch) {
        guard written != expected else { return }
        let at = zip(written, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(written.count, expected.count)
        throw Mismatch(description: "\(place): the ciphertext differs from byte \(at) on (\(written.count) bytes written, \(expected.count) published): "
            + "expected \(excerpt(expected, from: at)), wrote \(excerpt(written, from: at))")
    }

    /// Up to 16 bytes of `bytes` from `start`, in hex, marked where cut.
    private func excerpt(_ bytes: [UInt8], from start: Int) -> String {
        let start = min(start, bytes.count)
        let end = min(bytes.count, start + 16)
        return (start > 0 ? "…" : "") + Hex.encode(bytes[start..<end]) + (end < bytes.count ? "…" : "") + (bytes.isEmpty ? "(nothing)" : "")
    }
}
