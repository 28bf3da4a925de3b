@testable import ArcusCloud
import ArcusMesh
import ArcusTestSupport
import Testing

/// What a link says of frames that wait in the mesh's stream, on which its session decides
/// whether a silent peer is away or dead.
@Suite("Cloud links and stored frames", .timeLimit(.minutes(2)))
struct CloudStoredFramesTests {
    @Test("a link accepted before its dialler was heard learns from the dialler's announcement that frames wait in the stream")
    func linkAcceptedBeforeTheAnnouncement() async throws {
        let url = try SharedRelay.url()
        let settings = CloudSettings.testing(url, mesh: SharedRelay.freshMesh())
        let acceptor = CloudTransport(settings: settings, identity: PeerIdentity(), pendingHandshakes: .generous())
        let acceptorEvents = RecordedTransportEvents(acceptor.events)
        try await acceptor.start()
        defer { Task { await acceptor.stop() } }
        // The acceptor stops hearing presence (it still announces itself): the dialler's open
        // reaches it before any announcement of the dialler does, as the stream's consumer and
        // the presence subscription may deliver in either order.
        let subjects = acceptor.subjects
        let presence = try #require(acceptor.state.withLock { $0.subscriptions.first { $0.subject == subjects.presence } })
        presence.cancel()
        let tap = try RelayTap(url: url, subject: subjects.presence)
        defer { tap.close() }

        let dialler = CloudTransport(settings: settings, identity: PeerIdentity(), pendingHandshakes: .generous())
        try await dialler.start()
        defer { Task { await dialler.stop() } }
        let link = try await dialler.open(to: acceptor.localEndpoint) as! CloudLink
        let accepted = try await acceptorEvents.link(id: link.key.id)
        #expect(acceptor.storesFrames && dialler.storesFrames, "the shared relay has JetStream: both ends read through the stream")
        #expect(link.metrics.storesFramesFor == settings.storedFramesMaxAge, "the dialler heard the acceptor before it dialled")
        #expect(accepted.metrics.storesFramesFor == nil, "the acceptor cannot know yet whether the dialler reads through the stream")

        let diallers = { tap.payloads.filter { CloudAnnouncement(decoding: $0)?.peer == dialler.peer } }
        #expect(await eventually { !diallers().isEmpty })
        let announcement = try #require(diallers().last)
        acceptor.heard(announcement)
        #expect(
            accepted.metrics.storesFramesFor == settings.storedFramesMaxAge,
            "the link still calls a silent dialler dead after \(accepted.metrics.storesFramesFor.map { "\($0)" } ?? "its missed heartbeats"), though its frames wait in the stream")
    }
}
