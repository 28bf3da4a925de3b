import CZstd

/// Zstandard, for frame payloads large enough to gain from it. At level 2 it matches deflate's
/// ratio on sync batches at several times the speed, which matters on a Pi Zero.
enum Compression {
    static let level: Int32 = 2

    /// The compressed bytes, or nil when they would not be smaller than the input (unless
    /// `evenIfLarger`; nil then only if libzstd fails).
    static func compress(_ input: [UInt8], evenIfLarger: Bool = false) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(input.count))
        let written = input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                ZSTD_compress(destination.baseAddress, destination.count, source.baseAddress, source.count, level)
            }
        }
        guard ZSTD_isError(written) == 0, written < input.count || evenIfLarger else { return nil }
        output.removeSubrange(written...)
        return output
    }

    /// Decompresses `input`, which must expand to exactly `length` bytes. The caller bounded
    /// `length` (the frame limit, the expansion ratio, the decode allowance) before calling, and
    /// this allocates nothing else of size: a Zstandard frame whose header names another size is
    /// refused before the output is allocated, and one-shot decompression writes into the
    /// output alone (no window buffer), never past its end.
    static func decompress(_ input: ArraySlice<UInt8>, length: Int) throws(CodecError) -> [UInt8] {
        let declared = input.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        // UInt64.max: the header does not say (the output's size bounds it); UInt64.max − 1: not a frame.
        if declared == UInt64.max - 1 { throw .invalidValue("a compressed payload that is not a Zstandard frame") }
        if declared != UInt64.max, declared > UInt64(length) {
            throw .invalidValue("a compressed payload whose Zstandard header says it expands to \(declared) bytes, not its declared \(length)")
        }
        var failure: CodecError?
        let output = [UInt8](unsafeUninitializedCapacity: length) { destination, initialized in
            let produced = input.withUnsafeBytes { source in
                ZSTD_decompress(destination.baseAddress, length, source.baseAddress, source.count)
            }
            guard ZSTD_isError(produced) == 0, produced == length else {
                failure = .invalidValue("compressed payload does not expand to its declared \(length) bytes")
                initialized = 0
                return
            }
            initialized = length
        }
        if let failure { throw failure }
        return output
    }
}

/// Whole Zstandard frames for files the agent writes itself (its rotated logs): the frame's
/// header says its size, which is bounded before anything is allocated.
package enum FrameCompression {
    package static func compress(_ input: [UInt8]) -> [UInt8]? {
        Compression.compress(input, evenIfLarger: true)
    }

    package static func decompress(_ input: [UInt8], atMost limit: Int) throws(CodecError) -> [UInt8] {
        let declared = input.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        guard declared < UInt64(limit) else { throw .invalidValue("a Zstandard frame of unknown size, or over \(limit) bytes") }
        return try Compression.decompress(input[...], length: Int(declared))
    }
}
