/// One decoder of untrusted bytes under the fuzzer: what it does with an input, which entry point
/// of the code it calls, and valid inputs to start from.
///
/// `run` must never crash or hang on any input; it calls `FuzzCheck.fail` (a crash libFuzzer
/// reports) when the decoder breaks one of its own promises, such as a decode-encode round trip.
/// Targets stay thin — call the decoder, check what it promises — so that they follow the code
/// they fuzz when it changes.
struct FuzzTarget: Sendable {
    let name: String
    /// The entry point it calls, as people look for it in the code.
    let entryPoint: String
    let run: @Sendable ([UInt8]) -> Void
    /// Valid inputs (and a few borderline ones) to start a corpus from.
    let seeds: @Sendable () -> [[UInt8]]
}

enum FuzzTargets {
    /// Every target, in the order `Tools/fuzz.sh` runs them.
    static let all: [FuzzTarget] = [
        CodecTarget.target,
        HandshakeTarget.target,
        CertificateTarget.target,
        SessionFrameTarget.target,
        PresenceTarget.target,
        CloudTarget.target,
        LANHelloTarget.target,
        BluetoothHelloTarget.target,
        ManagementTarget.target,
        HTTPBodyTarget.target,
        DQLTarget.target,
    ]

    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    static var names: String { all.map(\.name).joined(separator: ", ") }
}

/// A broken promise: a crash, so that libFuzzer keeps the input that caused it.
enum FuzzCheck {
    static func fail(_ why: String) -> Never {
        fatalError("fuzz invariant broken: \(why)")
    }

    static func expect(_ condition: Bool, _ why: @autoclosure () -> String) {
        if !condition { fail(why()) }
    }
}

/// Splits an input into the messages it carries: each a 2-byte big-endian length and that many
/// bytes (a length past the end takes what is left). Lets one input play a peer's conversation.
enum FuzzMessages {
    static func split(_ bytes: ArraySlice<UInt8>, limit: Int = 64) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        var rest = bytes
        while rest.count >= 2, messages.count < limit {
            let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
            rest = rest.dropFirst(2)
            messages.append(Array(rest.prefix(length)))
            rest = rest.dropFirst(length)
        }
        return messages
    }

    static func join(_ messages: [[UInt8]]) -> [UInt8] {
        messages.flatMap { [UInt8(truncatingIfNeeded: $0.count >> 8), UInt8(truncatingIfNeeded: $0.count)] + $0 }
    }
}
