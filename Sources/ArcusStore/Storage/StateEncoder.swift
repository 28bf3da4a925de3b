import ArcusCRDT
import ArcusCodec

/// Encodes documents for the `state` column. Each document is a stream of its own (nothing
/// interned across documents), but the encoder's tables and buffer are kept from one document to
/// the next: the store writes one document at a time, and allocating them per document cost
/// more than the encoding.
struct StateEncoder: Sendable {
    private var context = EncodingContext()
    private var writer = ByteWriter(capacity: 1024)

    /// Encodes `state` and hands `body` the bytes, valid only during the call.
    mutating func encode<T>(_ state: DocumentState, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        context.restart()
        writer.removeAll()
        context.writeDocument(state, to: &writer)
        return try writer.bytes.withUnsafeBytes(body)
    }
}
