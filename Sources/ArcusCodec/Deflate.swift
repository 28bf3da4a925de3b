import CZlib

/// Raw deflate (RFC 1951) through zlib, for frame payloads large enough to gain from it.
enum Deflate {
    /// Level 1: nearly the ratio of the default on sync batches, at several times the speed.
    static let level: Int32 = 1

    /// The compressed bytes, or nil when they would not be smaller than the input.
    static func compress(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard arcus_deflate_init_raw(&stream, level) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let written: Int? = input.withUnsafeBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = UnsafeMutablePointer(mutating: inputBuffer.baseAddress)
                stream.avail_in = uInt(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = uInt(outputBuffer.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { return nil }
                return outputBuffer.count - Int(stream.avail_out)
            }
        }
        guard let written, written < input.count else { return nil }
        output.removeSubrange(written...)
        return output
    }

    /// Inflates `input`, which must expand to exactly `length` bytes: the length was checked
    /// against the frame limit before, and inflating never writes past it.
    static func decompress(_ input: ArraySlice<UInt8>, length: Int) throws(CodecError) -> [UInt8] {
        var stream = z_stream()
        guard arcus_inflate_init_raw(&stream) == Z_OK else { throw .invalidValue("cannot start inflating") }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: length)
        let (status, produced, consumedAll): (Int32, Int, Bool) = input.withUnsafeBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = UnsafeMutablePointer(mutating: inputBuffer.baseAddress)
                stream.avail_in = uInt(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = uInt(outputBuffer.count)
                let status = inflate(&stream, Z_FINISH)
                return (status, outputBuffer.count - Int(stream.avail_out), stream.avail_in == 0)
            }
        }
        guard status == Z_STREAM_END, produced == length, consumedAll else {
            throw .invalidValue("compressed payload does not inflate to its declared \(length) bytes")
        }
        return output
    }
}
