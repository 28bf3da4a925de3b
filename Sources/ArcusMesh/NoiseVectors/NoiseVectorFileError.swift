/// Why bytes are not a file of Noise test vectors at all (`NoiseVectorFile`). A vector of a
/// protocol the mesh runs with a missing or malformed field is not this: it is reported as a
/// failed vector, and the others still run.
public enum NoiseVectorFileError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLarge(Int)
    case notJSON
    case noVectorList
    case vectorNotAnObject(number: Int)
    case noProtocolName(number: Int)

    private static let format = #"a file of Noise test vectors is a JSON object {"vectors": [...]}, each vector an object with "protocol_name", as cacophony and snow publish them"#

    public var description: String {
        switch self {
        case .tooLarge(let count):
            return "the file holds \(count) bytes, more than the \(NoiseVectorFile.maximumBytes) read; the published vector files are about 1 MB"
        case .notJSON:
            return "the file is not JSON: \(Self.format)"
        case .noVectorList:
            return "the file has no list \"vectors\": \(Self.format)"
        case .vectorNotAnObject(let number):
            return "vector \(number) is not a JSON object: \(Self.format)"
        case .noProtocolName(let number):
            return "vector \(number) has no \"protocol_name\" string: \(Self.format)"
        }
    }
}
