#if canImport(Glibc)
import Glibc
#endif

/// Marks the threads that are inside a write transaction, so that a second `write` on the same
/// thread throws `StoreError.nestedWriteTransaction` instead of reaching GRDB, whose reentrancy
/// check would stop the process.
enum WriteMarker {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var isInsideWrite: Bool { pthread_getspecific(key) != nil }

    static func enter() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1)) }
    static func leave() { pthread_setspecific(key, nil) }
}
