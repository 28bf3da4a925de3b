extension SeqPacketSocket {
    /// A listening L2CAP LE socket bound to `address` (its PSM, or 0 for one the kernel picks),
    /// whose channels ask for SDUs of up to `receiveMTU` bytes and `security`.
    ///
    /// The options are set after bind: the kernel takes BT_RCVMTU only once bind has made the
    /// channel's source an LE address (before it, EINVAL), and they must precede listen/connect,
    /// whose connection request carries them.
    public static func l2capListener(on address: L2CAPAddress, receiveMTU: UInt16, security: BluetoothSecurityLevel) throws -> SeqPacketSocket {
        let socket = try SeqPacketSocket.l2cap()
        do {
            try socket.bind(address)
            try socket.setReceiveMTU(receiveMTU)
            try socket.setSecurity(security)
            try socket.listen()
            return socket
        } catch {
            socket.close()
            throw error
        }
    }

    /// An L2CAP LE channel from the controller at `local` (`L2CAPAddress.any` lets the kernel
    /// choose) to `remote`, asking for SDUs of up to `receiveMTU` bytes and `security`. Blocks
    /// until the channel is up or refused, or `timeout` (the kernel's own is 40 s) has passed:
    /// call it off the cooperative pool.
    public static func l2capConnection(
        from local: L2CAPAddress, to remote: L2CAPAddress, receiveMTU: UInt16, security: BluetoothSecurityLevel, timeout: Duration? = nil
    ) throws -> SeqPacketSocket {
        let socket = try SeqPacketSocket.l2cap()
        do {
            try socket.bind(local)
            try socket.setReceiveMTU(receiveMTU)
            try socket.setSecurity(security)
            if let timeout { try socket.setSendTimeout(timeout) }
            try socket.connect(remote)
            return socket
        } catch {
            socket.close()
            throw error
        }
    }
}
