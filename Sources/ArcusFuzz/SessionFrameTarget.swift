import ArcusMesh

/// Session frames and the fragments that carry them (`SessionFrame(decoding:)`,
/// `FragmentReassembler.accept(_:)`): every message on every link after the handshake. A frame
/// that decodes encodes and decodes to itself; reassembly never yields a message over its limit,
/// and a message it yields, cut into fragments again, comes back whole.
///
/// Input: the whole input as one session frame; then the input as link frames (`FuzzMessages`)
/// through a reassembler, each message it yields decoded as a session frame too.
enum SessionFrameTarget {
    static let target = FuzzTarget(
        name: "session-frame", entryPoint: "ArcusMesh: SessionFrame(decoding:), FragmentReassembler.accept(_:), MessageFragments",
        run: run, seeds: seeds
    )

    /// Small, so that inputs of a fuzzer's size reach the limit.
    static let maximumMessageSize = 4096

    static func run(_ bytes: [UInt8]) {
        decodeFrame(bytes)
        var reassembler = FragmentReassembler(maximumMessageSize: maximumMessageSize)
        for fragment in FuzzMessages.split(bytes[...]) {
            let yielded: [UInt8]?
            do throws(FragmentationError) {
                yielded = try reassembler.accept(fragment)
            } catch {
                break
            }
            guard let message = yielded else { continue }
            FuzzCheck.expect(message.count <= maximumMessageSize, "reassembly yielded \(message.count) bytes over its limit of \(maximumMessageSize)")
            decodeFrame(message)
            // Cut again, at a small MTU, it comes back whole.
            var again = FragmentReassembler(maximumMessageSize: maximumMessageSize)
            var rebuilt: [UInt8]?
            for piece in MessageFragments(message, mtu: 7) {
                do throws(FragmentationError) {
                    if let whole = try again.accept(piece) { rebuilt = whole }
                } catch {
                    FuzzCheck.fail("a message's own fragments were refused: \(error)")
                }
            }
            FuzzCheck.expect(rebuilt == message, "a message cut into fragments did not come back whole")
        }
    }

    static func decodeFrame(_ bytes: [UInt8]) {
        guard let frame = try? SessionFrame(decoding: bytes) else { return }
        let again = try? SessionFrame(decoding: frame.encoded())
        FuzzCheck.expect(again == frame, "a session frame changed in a round trip: \(frame)")
    }

    static func seeds() -> [[UInt8]] {
        // Hellos as a session writes them: type, version, role, dial id, incarnation, window, peer id.
        let peer = (0..<16).map { UInt8($0 * 7) }
        let hellos = [
            [1, 1, 1] + [UInt8](repeating: 0, count: 7) + [3] + [0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0] + [64] + peer,
            [1, 1, 2] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0, count: 7) + [1] + [1] + peer,
        ]
        let frames: [SessionFrame] = hellos.map { try! SessionFrame(decoding: $0) } + [
            .data(sequence: 1, ack: 0, payload: Array("a sync frame".utf8)),
            .data(sequence: 300, ack: 299, payload: [UInt8](repeating: 0x42, count: 600)),
            .ack(17),
            .heartbeat(nonce: 123_456_789, ack: 4),
            .heartbeatReply(nonce: 123_456_789),
            .presence(PresenceTarget.fourLinks.encoded()),
        ]
        var seeds = frames.map { $0.encoded() }
        // The same frames as link frames: whole, and cut at a BLE-sized MTU.
        for frame in frames {
            seeds.append(FuzzMessages.join(Array(MessageFragments(frame.encoded(), mtu: 4096))))
            seeds.append(FuzzMessages.join(Array(MessageFragments(frame.encoded(), mtu: 64))))
        }
        return seeds
    }
}
