import ArcusMesh
import Foundation

/// `arcus mesh noise-vectors FILE`: runs a file of published Noise test vectors through the
/// mesh's own handshake and session code (`NoiseVectorFile`).
public struct NoiseVectorCheck {
    public let path: String

    public init(_ path: String) {
        self.path = path
    }

    /// The report of every vector the mesh runs. Throws (exit status 2) when the file cannot be
    /// read or is not a file of test vectors.
    public func run() async throws(CommandError) -> NoiseVectorReport {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CommandError("cannot read \(path): it does not exist or is not readable", exitStatus: 2)
        }
        defer { try? handle.close() }
        // One byte over the limit, so that a larger file is noticed rather than cut.
        let data: Data
        do {
            data = try handle.read(upToCount: NoiseVectorFile.maximumBytes + 1) ?? Data()
        } catch {
            throw CommandError("cannot read \(path): \(error.localizedDescription)", exitStatus: 2)
        }
        let file: NoiseVectorFile
        do {
            file = try NoiseVectorFile(bytes: Array(data))
        } catch {
            throw CommandError("\(path): \(error)", exitStatus: 2)
        }
        return await file.run()
    }
}
