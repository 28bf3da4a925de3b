import ArcusMesh

/// Talks to the kernel over its Bluetooth management socket, carried by any `Link` that keeps
/// packet boundaries (the socket itself through `SeqPacketLink`, or a test's double of the
/// kernel): sends a command and waits for its Command Complete or Command Status, and hands
/// every other event to `events`. Commands of one code are answered in order.
public actor ManagementClient {
    public nonisolated let events: AsyncStream<(controller: UInt16, event: ManagementEvent)>
    private nonisolated let eventSink: AsyncStream<(controller: UInt16, event: ManagementEvent)>.Continuation
    private let link: any Link
    private var waiting: [UInt16: [CheckedContinuation<Result<[UInt8], ManagementError>, Never>]] = [:]
    private var reader: Task<Void, Never>?
    private var isClosed = false
    /// How long a command may go unanswered before it counts as refused.
    static let answerTimeout: Duration = .seconds(10)

    public init(link: any Link) {
        self.link = link
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Starts reading what the kernel sends; call once.
    public func start() {
        guard reader == nil else { return }
        reader = Task { [link] in
            for await bytes in link.incoming {
                // A packet that breaks the format is skipped: the next one starts afresh.
                guard let packet = try? ManagementPacket(parsing: bytes), let event = try? ManagementEvent(packet) else { continue }
                await self.handle(event, controller: packet.controller)
            }
            await self.finish()
        }
    }

    /// Sends `command` and returns its return parameters once the kernel says it succeeded.
    public func send(_ command: ManagementCommand, controller: UInt16) async throws(ManagementError) -> [UInt8] {
        guard !isClosed else { throw .closed }
        let code = command.code
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: Self.answerTimeout)
            if !Task.isCancelled { await self?.answer(code, .failure(.noAnswer(command: code))) }
        }
        defer { timeout.cancel() }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], ManagementError>, Never>) in
            waiting[code, default: []].append(continuation)
            let packet = command.packet(controller: controller).encoded
            Task { [link] in
                do {
                    try await link.send(packet)
                } catch LinkError.closed {
                    self.answer(code, .failure(.closed))
                } catch {
                    self.answer(code, .failure(.notSent(command: code, "\(error)")))
                }
            }
        }
        return try result.get()
    }

    public func close() {
        link.close()
        finish()
    }

    private func handle(_ event: ManagementEvent, controller: UInt16) {
        switch event {
        case .commandComplete(let command, let status, let parameters):
            answer(command, status == .success ? .success(parameters) : .failure(.refused(command: command, status: status)))
        case .commandStatus(let command, let status) where status != .success:
            answer(command, .failure(.refused(command: command, status: status)))
        case .commandStatus:
            break  // pending: the Command Complete follows
        default:
            eventSink.yield((controller, event))
        }
    }

    /// Resumes the oldest command of `code` still waiting, if any.
    private func answer(_ code: UInt16, _ result: Result<[UInt8], ManagementError>) {
        guard var queue = waiting[code], !queue.isEmpty else { return }
        let first = queue.removeFirst()
        waiting[code] = queue.isEmpty ? nil : queue
        first.resume(returning: result)
    }

    private func finish() {
        guard !isClosed else { return }
        isClosed = true
        for queue in waiting.values { for continuation in queue { continuation.resume(returning: .failure(.closed)) } }
        waiting = [:]
        eventSink.finish()
    }
}
