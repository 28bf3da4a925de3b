@testable import ArcusAgent
import ArcusLoopback
import ArcusMesh
import Foundation
import Testing

/// A scarce transport's admissions (Bluetooth) take a slot under a lock. Held while a peer is
/// slow to say hello, that lock held up every other link: two agents that dialled each other at
/// once each waited, on one link, for the hello the other held back on the other link, until
/// both hello timeouts refused both links — in the same rhythm at every retry, so that in 1 run
/// of 3 `arcus bench ble-emulated` never linked at all (issue 18, item 4).
@Suite("Agent: admitting scarce links")
struct ScarceAdmissionTests {
    @Test("a peer that finished the handshake but never says hello holds up no other peer's link on the same radio")
    func silentPeerHoldsUpNoOne() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-scarce-admit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let secretBytes = MeshSecret.random().bytes
        let secretPath = scratch.appendingPathComponent("secret").path
        #expect(try SecretFile.create(secretBytes, at: secretPath))
        let secret = try MeshSecret(bytes: secretBytes)
        let agent = try AgentScarceLinkTests.agent(
            "hub", network: LoopbackNetwork(kind: .bluetooth), secret: secretPath,
            budget: ScarceLinkBudget(limit: 2, rotationInterval: .seconds(60)), in: scratch
        )

        // A peer completes the handshake and then says nothing: the agent waits for its hello
        // (up to the multiplexer's 5 s).
        let silent = PeerIdentity()
        let (silentAtHub, silentEnd) = Loopback.pair(name: "silent", kind: .bluetooth)
        let silentAdmission = Task {
            await agent.admit(silentAtHub, as: .responder, from: TransportEndpoint(kind: .bluetooth, address: "silent"))
        }
        let silentLink = try await MeshHandshake(identity: silent, credential: .sharedSecret(secret)).secure(silentEnd, as: .initiator)
        var fromHub = silentLink.incoming.makeAsyncIterator()
        // The agent's hello: it is now waiting for the silent peer's.
        #expect(await fromHub.next() != nil)

        // Another peer, whose multiplexer gives up on a hello after 1 s, links meanwhile.
        let prompt = PeerIdentity()
        let (promptAtHub, promptEnd) = Loopback.pair(name: "prompt", kind: .bluetooth)
        let promptAdmission = Task {
            await agent.admit(promptAtHub, as: .responder, from: TransportEndpoint(kind: .bluetooth, address: "prompt"))
        }
        let promptLink = try await MeshHandshake(identity: prompt, credential: .sharedSecret(secret)).secure(promptEnd, as: .initiator)
        var impatient = SessionConfiguration()
        impatient.helloTimeout = .seconds(1)
        let promptMultiplexer = Multiplexer(localPeer: prompt.peerID, configuration: impatient)
        let bound: Result<PeerSession, LinkAdmissionError>
        do {
            bound = .success(try await promptMultiplexer.add(promptLink, as: .dialer))
        } catch {
            bound = .failure(error)
        }
        #expect(throws: Never.self, "the agent's hello came too late: \(bound)") { try bound.get() }
        #expect(await promptAdmission.value == prompt.peerID)

        // The silent peer hangs up: its link is refused, and held no slot.
        silentLink.close()
        #expect(await silentAdmission.value == nil)
        #expect(agent.scarceReservations.withLock { $0.isEmpty })
        await promptMultiplexer.close()
        await agent.multiplexer.close()
    }
}
