import ArcusCRDT

/// Random values and mutations for property tests: the same generator drives the CRDT, codec
/// and store tests, so a failure found in one replays in the others.
public enum RandomMutations {
    public static let names = ["status", "color", "qty", "owner", "zone", "meta", "tags"]

    public static func value(_ rng: inout SeededRandom, depth: Int = 1) -> Value {
        switch Int.random(in: 0..<13, using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int64.random(in: -5...5, using: &rng))
        case 3: return .int(Int64.random(in: Int64.min...Int64.max, using: &rng))
        case 4: return .double(Double(Int.random(in: -50_000...50_000, using: &rng)) / 100)
        case 5: return .double(Double.random(in: -1e300...1e300, using: &rng))
        case 6: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in .int(Int64.random(in: 0...9, using: &rng)) })
        case 7 where depth < 3, 8 where depth < 3:
            var fields: [String: Value] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                fields[names.randomElement(using: &rng)!] = value(&rng, depth: depth + 1)
            }
            return .object(fields)
        case 9: return .string("2026-\(Int.random(in: 10...12, using: &rng))-0\(Int.random(in: 1...9, using: &rng))T10:05:00Z")
        case 10: return .binary((0..<Int.random(in: 0...5, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 11: return .string(String(repeating: "long string ✓ ", count: Int.random(in: 1...6, using: &rng)))
        default: return .string(["red", "blue", "open", "done", "in_progress"].randomElement(using: &rng)!)
        }
    }

    public static func path(_ rng: inout SeededRandom) -> FieldPath {
        FieldPath((0..<Int.random(in: 1...3, using: &rng)).map { _ in names.randomElement(using: &rng)! })
    }

    /// Applies one random mutation to `state` at `stamp` and returns its delta.
    public static func mutate(_ state: inout DocumentState, at stamp: Stamp, _ rng: inout SeededRandom) -> DocumentState? {
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<25:
            var fields: [String: Value] = [:]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                fields[names.randomElement(using: &rng)!] = value(&rng)
            }
            let strategy = WriteStrategy.allCases.randomElement(using: &rng)!
            let hints = Bool.random(using: &rng) ? TypeHints.objectsAreMaps : TypeHints(objects: .register)
            return state.upsert(fields, strategy: strategy, at: stamp, hints: hints)
        case 25..<50: return state.set(path(&rng), to: value(&rng), at: stamp)
        case 50..<62: return state.unset(path(&rng), at: stamp)
        case 62..<80:
            let amount: Number = Bool.random(using: &rng) ? .int(Int64.random(in: -3...5, using: &rng)) : .double(0.5)
            return state.increment(path(&rng), by: amount, at: stamp)
        case 80..<85: return state.replaceWithCounter(path(&rng), at: stamp)
        case 85..<92: return state.remove(at: stamp)
        default:
            let token = AttachmentToken(hash: [UInt8](repeating: UInt8.random(in: 0...255, using: &rng), count: 32), length: 10, metadata: ["name": "f"])
            return state.setAttachment(path(&rng), to: token, at: stamp)
        }
    }

    /// A document built by `count` random mutations from a few sites.
    public static func document(_ rng: inout SeededRandom, mutations count: Int, sites: [SiteID]) -> DocumentState {
        var state = DocumentState()
        var time: UInt64 = 1_800_000_000_000
        for _ in 0..<count {
            time += UInt64.random(in: 0...40, using: &rng)
            let stamp = Stamp(time: Timestamp(milliseconds: time, logical: UInt16.random(in: 0...30, using: &rng)), site: sites.randomElement(using: &rng)!)
            _ = mutate(&state, at: stamp, &rng)
        }
        return state
    }

    /// Damages encoded bytes as hostile-input tests do: one to four flipped bits, inserted or
    /// removed bytes, or bytes set to the values that varints and lengths trip on.
    public static func damage(_ bytes: inout [UInt8], _ rng: inout SeededRandom) {
        for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
            case 1: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            case 2: bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
            default: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = [0x00, 0x7F, 0x80, 0xFF].randomElement(using: &rng)!
            }
        }
    }
}
