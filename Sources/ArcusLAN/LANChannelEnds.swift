import NIOCore

/// The two ends of an open `LANConnection`: frames to pull and a writer that suspends while the
/// socket is full. They stay usable until the channel closes; then the task that holds them
/// finishes the writer and lets the channel go.
struct LANChannelEnds: Sendable {
    let channel: any Channel
    let frames: LANFramePull
    let writer: NIOAsyncChannelOutboundWriter<[UInt8]>
    let failure: LANFailureRecord
}

extension LANConnection {
    /// Opens the channel's ends. NIO scopes them to a closure (`executeThenClose`); a link outlives
    /// any one caller's scope, so a task of its own holds the scope open until the channel closes.
    /// `executeThenClose` calls its body before anything that can throw, so the continuation is
    /// always resumed.
    func open() async -> LANChannelEnds {
        await withCheckedContinuation { continuation in
            Task { [channel, failure] in
                try? await channel.executeThenClose { inbound, outbound in
                    continuation.resume(returning: LANChannelEnds(
                        channel: channel.channel, frames: LANFramePull(inbound), writer: outbound, failure: failure
                    ))
                    try await channel.channel.closeFuture.get()
                }
            }
        }
    }
}

/// Pulls received frames one at a time, so that a frame leaves NIO's bounded buffer only when
/// someone takes it: what makes `incoming` bounded and a slow reader hold back its peer.
///
/// `@unchecked Sendable`: the iterator is used by one task at a time — the acceptor reading the
/// hello, then the link's single `incoming` consumer, which `AsyncStream(unfolding:)` serves one
/// call at a time.
final class LANFramePull: @unchecked Sendable {
    private var iterator: NIOAsyncChannelInboundStream<[UInt8]>.AsyncIterator

    init(_ frames: NIOAsyncChannelInboundStream<[UInt8]>) {
        iterator = frames.makeAsyncIterator()
    }

    /// The next frame; nil once the connection has closed or failed (the link's `failure` says
    /// why), or the calling task is cancelled.
    func next() async -> [UInt8]? {
        try? await iterator.next()
    }
}
