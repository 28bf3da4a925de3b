import ArcusTestSupport
import ArcusTransportConformance
import Testing
@testable import ArcusMesh

@Suite("Fragment format")
struct FragmentFormatTests {
    @Test("a message that fits is one fragment: the first flag, then its bytes")
    func wholeMessage() {
        #expect(Array(MessageFragments([1, 2, 3], mtu: 10)) == [[0x01, 1, 2, 3]])
        #expect(Array(MessageFragments([], mtu: 10)) == [[0x01]])
        #expect(Array(MessageFragments(Array(1...9), mtu: 10)) == [[0x01] + Array(1...9)])
    }

    @Test("a longer message: first and more with its length, then more, then the last bytes")
    func fragmentedMessage() {
        let message = Array(UInt8(0)..<20)
        let fragments = Array(MessageFragments(message, mtu: 8))
        #expect(fragments == [
            [0x03, 20] + Array(message[0..<6]),
            [0x02] + Array(message[6..<13]),
            [0x00] + Array(message[13..<20]),
        ])
        #expect(MessageFragments(message, mtu: 8).fragmentCount == 3)
    }

    @Test("lengths round-trip through the prefix; cut or overlong prefixes are refused")
    func lengthPrefix() {
        for length in [0, 1, 127, 128, 16_383, 16_384, 16 << 20, Int(UInt32.max), Int.max] {
            var bytes: [UInt8] = [0xAA]
            LengthPrefix.append(length, to: &bytes)
            #expect(bytes.count == 1 + LengthPrefix.size(of: length))
            let read = LengthPrefix.read(from: bytes, at: 1)
            #expect(read?.length == length && read?.end == bytes.count)
            #expect(LengthPrefix.read(from: Array(bytes.dropLast()), at: 1) == nil)
        }
        #expect(LengthPrefix.read(from: Array(repeating: 0xFF, count: 9) + [0x01], at: 0) == nil, "2^64 - 1 is no Int")
        #expect(LengthPrefix.read(from: Array(repeating: 0x80, count: 10) + [0x00], at: 0) == nil, "eleven bytes")
        #expect(LengthPrefix.size(of: 16 << 20) == 4)
    }

    @Test("the reassembler rebuilds whatever the fragmenter makes, for random sizes and MTUs")
    func randomRoundTrips() throws {
        for seed in SeededRandom.seeds(count: 4, test: "fragment round trips") {
            print("fragment round trips: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
            var random = SeededRandom(seed: seed)
            var reassembler = FragmentReassembler(maximumMessageSize: 1 << 16)
            for index in 0..<200 {
                let mtu = Int.random(in: MessageFragments.minimumMTU(forMessagesUpTo: 1 << 16)...600, using: &random)
                let size = Bool.random(using: &random) ? Int.random(in: 0...(3 * mtu), using: &random) : Int.random(in: 0...(1 << 16), using: &random)
                let message = testMessage(index, size: size)
                let fragments = MessageFragments(message, mtu: mtu)
                #expect(Array(fragments).count == fragments.fragmentCount)
                #expect(fragments.allSatisfy { $0.count <= mtu && !$0.isEmpty })

                var rebuilt: [[UInt8]] = []
                for fragment in fragments {
                    if let whole = try reassembler.accept(fragment) { rebuilt.append(whole) }
                }
                #expect(rebuilt == [message], "a message of \(size) bytes over an MTU of \(mtu)")
            }
        }
    }
}
