extension PeerID {
    /// A peer id as a link's hello carries it: exactly `size` bytes. The hello only claims it;
    /// over a `SecureLink` the multiplexer checks the claim against the handshake.
    init?(helloBytes: some Collection<UInt8>) {
        guard helloBytes.count == Self.size else { return nil }
        self.bytes = Array(helloBytes)
    }
}
