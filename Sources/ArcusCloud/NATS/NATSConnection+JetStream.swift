import CNATS
import Glibc

extension NATSConnection {
    /// Creates the stream, or updates its subjects and limits if it exists. Throws a clear
    /// error when the server has no JetStream.
    public func ensureStream(_ config: NATSStreamConfig) throws(NATSError) {
        try withJetStream("ensuring the stream \(config.name)") { jetStream throws(NATSError) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var errorCode = jsErrCode(rawValue: 0)
            let lookup = js_GetStreamInfo(&info, jetStream, config.name, nil, &errorCode)
            if let info { jsStreamInfo_Destroy(info) }
            let exists: Bool
            switch lookup {
            case NATS_OK: exists = true
            case NATS_NOT_FOUND: exists = false
            default: throw jetStreamError(lookup, errorCode, while: "looking up the stream \(config.name)")
            }
            try withStreamConfig(config) { cConfig throws(NATSError) in
                var result: UnsafeMutablePointer<jsStreamInfo>?
                var errorCode = jsErrCode(rawValue: 0)
                var status = exists
                    ? js_UpdateStream(&result, jetStream, cConfig, nil, &errorCode)
                    : js_AddStream(&result, jetStream, cConfig, nil, &errorCode)
                if let created = result { jsStreamInfo_Destroy(created) }
                if !exists, errorCode == JSStreamNameExistErr {
                    // Another client created it since the lookup: update it instead.
                    result = nil
                    errorCode = jsErrCode(rawValue: 0)
                    status = js_UpdateStream(&result, jetStream, cConfig, nil, &errorCode)
                    if let updated = result { jsStreamInfo_Destroy(updated) }
                }
                guard status == NATS_OK else {
                    throw jetStreamError(status, errorCode, while: "\(exists ? "updating" : "creating") the stream \(config.name)")
                }
            }
        }
    }

    /// Deletes the stream and every message in it. Throws when it does not exist.
    public func deleteStream(_ name: String) throws(NATSError) {
        try withJetStream("deleting the stream \(name)") { jetStream throws(NATSError) in
            var errorCode = jsErrCode(rawValue: 0)
            let status = js_DeleteStream(jetStream, name, nil, &errorCode)
            guard status == NATS_OK else { throw jetStreamError(status, errorCode, while: "deleting the stream \(name)") }
        }
    }

    /// What the stream holds now, and its byte limit.
    public func streamState(_ name: String) throws(NATSError) -> NATSStreamState {
        try withJetStream("reading the stream \(name)") { jetStream throws(NATSError) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var errorCode = jsErrCode(rawValue: 0)
            let status = js_GetStreamInfo(&info, jetStream, name, nil, &errorCode)
            guard status == NATS_OK, let info else {
                throw jetStreamError(status, errorCode, while: "reading the stream \(name)")
            }
            defer { jsStreamInfo_Destroy(info) }
            let state = info.pointee.State
            return NATSStreamState(
                messages: state.Msgs, bytes: state.Bytes, firstSequence: state.FirstSeq, lastSequence: state.LastSeq,
                maxBytes: info.pointee.Config?.pointee.MaxBytes ?? -1)
        }
    }

    /// Publishes and waits for the stream that captures `subject` to store the message;
    /// returns its stream sequence. Unlike `publish`, fails while disconnected.
    @discardableResult
    public func publishPersisted(_ subject: String, _ payload: [UInt8]) throws(NATSError) -> UInt64 {
        guard payload.count <= Int(Int32.max) else {
            throw NATSError(operation: "publishing on \(subject)", detail: "payload of \(payload.count) bytes is too large")
        }
        try NATSSubject.validate(subject, allowsWildcards: false, while: "publishing on \(subject)")
        return try withJetStream("publishing on \(subject)") { jetStream throws(NATSError) in
            var ack: UnsafeMutablePointer<jsPubAck>?
            var errorCode = jsErrCode(rawValue: 0)
            let status = payload.withUnsafeBytes { bytes in
                js_Publish(&ack, jetStream, subject, bytes.baseAddress, Int32(bytes.count), nil, &errorCode)
            }
            defer { if let ack { jsPubAck_Destroy(ack) } }
            guard status == NATS_OK, let ack else {
                throw jetStreamError(
                    status, errorCode, while: "publishing \(payload.count) bytes on \(subject) to a stream",
                    noResponders: "no stream captures \(subject), or the server has no JetStream: call ensureStream first, and start nats-server with -js")
            }
            return ack.pointee.Sequence
        }
    }

    /// An ordered consumer of the stream that captures `subject`: ephemeral, starting with the
    /// messages published after this call. `handler` gets every message in stream order exactly
    /// once, also across this connection being cut and reconnected and across a server restart
    /// (file storage), as long as the stream still holds them. `NATSMessage.streamSequence` is set.
    ///
    /// libnats recreates the consumer from the last delivered sequence when it sees a gap or
    /// misses the idle heartbeats; deliveries are also deduplicated by stream sequence.
    public func subscribeOrdered(
        _ subject: String,
        _ handler: @escaping @Sendable (NATSMessage) -> Void
    ) throws(NATSError) -> NATSSubscription {
        try subscribeOrdered(subject, startingAt: .new, handler)
    }

    /// `subscribeOrdered(_:_:)`, starting at `position` in the stream.
    public func subscribeOrdered(
        _ subject: String,
        startingAt position: NATSStartPosition,
        _ handler: @escaping @Sendable (NATSMessage) -> Void
    ) throws(NATSError) -> NATSSubscription {
        try NATSSubject.validate(subject, allowsWildcards: true, while: "subscribing to \(subject)")
        let delivery = MessageDelivery(deduplicatesByStreamSequence: true, handler: handler)
        let operation = "subscribing to the stream that captures \(subject)"
        let jetStream = try withJetStream(operation) { $0 }
        return try makeSubscription(subject, delivery: delivery, operation: operation) {
            _, closure throws(NATSError) -> OpaquePointer? in
            var options = jsSubOptions()
            try check(jsSubOptions_Init(&options), "preparing the subscription options")
            options.Ordered = true
            switch position {
            case .new:
                options.Config.DeliverPolicy = js_DeliverNew
            case .all:
                options.Config.DeliverPolicy = js_DeliverAll
            case .sequence(let sequence):
                options.Config.DeliverPolicy = js_DeliverByStartSequence
                options.Config.OptStartSeq = max(sequence, 1)
            }
            // Heartbeats let libnats notice a consumer lost to a server restart and recreate it.
            options.Config.Heartbeat = Duration.seconds(1).natsNanoseconds
            var sub: OpaquePointer?
            var errorCode = jsErrCode(rawValue: 0)
            let status = js_Subscribe(&sub, jetStream, subject, natsMessageCallback, closure, nil, &options, &errorCode)
            guard status == NATS_OK else {
                throw jetStreamError(
                    status, errorCode, while: operation,
                    noResponders: "no stream captures \(subject), or the server has no JetStream: call ensureStream first, and start nats-server with -js")
            }
            return sub
        }
    }

    /// Runs `body` with the JetStream context, made on first use and kept until `close()`.
    private func withJetStream<T>(
        _ operation: @autoclosure () -> String,
        _ body: (OpaquePointer) throws(NATSError) -> T
    ) throws(NATSError) -> T {
        try withConnection(operation()) { connection throws(NATSError) in
            if let existing = state.withLock({ $0.jetStream }) {
                return try body(existing.pointer)
            }
            var created: OpaquePointer?
            var options = jsOptions()
            try check(jsOptions_Init(&options), "preparing JetStream options")
            options.Wait = Duration.seconds(5).natsMilliseconds
            try check(natsConnection_JetStream(&created, connection, &options), "opening JetStream")
            guard let created else {
                throw NATSError(operation: "opening JetStream", detail: "libnats returned no JetStream context")
            }
            let fresh = SendableHandle(pointer: created)
            // Another thread may have made one meanwhile: keep the first, destroy ours.
            let stored = state.withLock { state -> Bool in
                guard state.jetStream == nil else { return false }
                state.jetStream = fresh
                return true
            }
            if !stored { jsCtx_Destroy(fresh.pointer) }
            guard let context = state.withLock({ $0.jetStream?.pointer }) else {
                throw NATSError(operation: operation(), detail: "the JetStream context is gone")
            }
            return try body(context)
        }
    }

    /// `config` as a C `jsStreamConfig`, valid during `body`.
    private func withStreamConfig<T>(
        _ config: NATSStreamConfig,
        _ body: (UnsafeMutablePointer<jsStreamConfig>) throws(NATSError) -> T
    ) throws(NATSError) -> T {
        var cConfig = jsStreamConfig()
        try check(jsStreamConfig_Init(&cConfig), "preparing the stream configuration")
        let name = strdup(config.name)
        let subjects = config.subjects.map { strdup($0) }
        defer {
            free(name)
            subjects.forEach { free($0) }
        }
        var subjectPointers = subjects.map { UnsafePointer<CChar>($0) }
        return try subjectPointers.withUnsafeMutableBufferPointer { subjectBuffer throws(NATSError) in
            cConfig.Name = UnsafePointer(name)
            cConfig.Subjects = subjectBuffer.baseAddress
            cConfig.SubjectsLen = Int32(subjectBuffer.count)
            cConfig.MaxAge = config.maxAge.natsNanoseconds
            cConfig.MaxBytes = Int64(config.maxBytes)
            cConfig.Discard = js_DiscardOld
            cConfig.Storage = config.storage == .file ? js_FileStorage : js_MemoryStorage
            return try body(&cConfig)
        }
    }

    private func jetStreamError(
        _ status: natsStatus,
        _ errorCode: jsErrCode,
        while operation: String,
        noResponders: String? = nil
    ) -> NATSError {
        let notEnabled = errorCode == JSNotEnabledErr || errorCode == JSNotEnabledForAccountErr
        if notEnabled || (status == NATS_NO_RESPONDERS && noResponders == nil) {
            return NATSError(
                status, while: "\(operation) on \(serverDescription)",
                hint: "the server has no JetStream: start nats-server with -js (and a store directory, -sd DIR)")
        }
        if status == NATS_NO_RESPONDERS, let noResponders {
            return NATSError(status, while: "\(operation) on \(serverDescription)", hint: noResponders)
        }
        var error = NATSError(status, while: "\(operation) on \(serverDescription)")
        if errorCode.rawValue != 0, error.hint == nil {
            error = NATSError(
                operation: error.operation, statusCode: error.statusCode,
                detail: "\(error.detail) (JetStream error \(errorCode.rawValue))", hint: nil)
        }
        return error
    }
}
