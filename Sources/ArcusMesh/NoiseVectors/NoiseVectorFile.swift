import Foundation

/// A file of Noise test vectors in the Noise wiki's JSON format (`{"vectors": [...]}`, as
/// cacophony and snow publish them), sorted into the vectors the mesh's handshake state can run
/// and those of other protocols, which are counted and skipped.
///
/// The mesh runs `Noise_XX_25519_ChaChaPoly_SHA256` and, with a shared secret,
/// `Noise_XXpsk0_25519_ChaChaPoly_SHA256`; a vector runs when its protocol is XX, with or without
/// psk modifiers, over 25519, ChaChaPoly and SHA256 (`NoiseHandshakePattern`).
///
/// ```swift
/// let file = try NoiseVectorFile(bytes: contents)   // NoiseVectorFileError if it is no such file
/// let report = await file.run()
/// report.lines   // a line per failure, the skipped count, then "N passed, M failed"
/// ```
public struct NoiseVectorFile: Sendable {
    /// The largest file read: the published files are about 1 MB.
    public static let maximumBytes = 64 << 20

    enum Entry: Sendable {
        case runnable(NoiseTestVector)
        /// A vector of a protocol the mesh runs whose fields are missing or malformed: it fails.
        case unreadable(title: String, why: String)
    }

    let entries: [Entry]
    /// How many vectors are of protocols the mesh does not run.
    public let skipped: Int

    /// Sorts the vectors of `bytes`. Throws `NoiseVectorFileError` when the bytes are not such a
    /// file at all: too large, not JSON, no list of vectors, or a vector without its protocol name.
    public init(bytes: [UInt8]) throws(NoiseVectorFileError) {
        guard bytes.count <= Self.maximumBytes else { throw .tooLarge(bytes.count) }
        let document: Any
        do {
            document = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            throw .notJSON
        }
        guard let list = (document as? [String: Any])?["vectors"] as? [Any] else { throw .noVectorList }
        var entries: [Entry] = []
        var skipped = 0
        for (index, item) in list.enumerated() {
            let number = index + 1
            guard let object = item as? [String: Any] else { throw .vectorNotAnObject(number: number) }
            guard let name = object["protocol_name"] as? String else { throw .noProtocolName(number: number) }
            guard let pattern = Self.pattern(ofProtocol: name) else {
                skipped += 1
                continue
            }
            do {
                entries.append(.runnable(try NoiseTestVector(object, number: number, protocolName: name, pattern: pattern)))
            } catch {
                let source = (object["source"] as? String).map { ", from \($0)" } ?? ""
                entries.append(.unreadable(title: "vector \(number) (\(name)\(source))", why: error.description))
            }
        }
        self.entries = entries
        self.skipped = skipped
    }

    /// How many vectors the mesh's handshake state runs (or would, if they were well formed).
    public var runnable: Int { entries.count }

    /// Runs every vector the mesh's handshake state can run.
    public func run() async -> NoiseVectorReport {
        var report = NoiseVectorReport(skipped: skipped)
        for entry in entries {
            switch entry {
            case .runnable(let vector):
                if let failure = await NoiseVectorReplay(vector: vector).run() {
                    report.failures.append(failure)
                } else {
                    report.passed += 1
                }
            case .unreadable(let title, let why):
                report.failures.append("\(title): cannot be run: \(why)")
            }
        }
        return report
    }

    /// The pattern of a protocol the mesh runs, `Noise_<XX…>_25519_ChaChaPoly_SHA256`; nil for
    /// any other protocol.
    static func pattern(ofProtocol name: String) -> NoiseHandshakePattern? {
        let parts = name.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "Noise", parts[2] == "25519", parts[3] == "ChaChaPoly", parts[4] == "SHA256" else { return nil }
        return NoiseHandshakePattern(name: String(parts[1]))
    }
}
