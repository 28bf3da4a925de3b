/// A libnats handle carried across the `Mutex` that guards it. libnats objects are safe to use
/// from any thread; what needs guarding is their lifetime, which their owner's `Mutex` does.
struct SendableHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
