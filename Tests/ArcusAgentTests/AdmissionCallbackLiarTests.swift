@testable import ArcusAgent
@testable import ArcusMesh
import Foundation
import Testing

/// The operator's admission callback as a liar plays it, asked by the policy itself (the agent
/// asks it the same way: AgentAdmissionTests): whatever it answers that is not a plain
/// `{"allow": bool}` within 64 KiB refuses.
@Suite(.serialized)
struct AdmissionCallbackLiarTests {
    @Test("a callback that lies is a refusal, never an admission: an allow larger than the agent reads, a non-bool allow, not JSON; the truthful one admits")
    func lies() async throws {
        let peer = AuthenticatedPeer(publicKey: PeerIdentity().publicKey, name: nil, permissions: .full, certificate: nil)
        let answers: [(label: String, answer: String, admitted: Bool)] = [
            ("oversized", #"{"allow": true, "pad": ""# + String(repeating: " ", count: 70 << 10) + #""}"#, false),
            ("not a bool", #"{"allow": "true"}"#, false),
            ("not JSON", "yes, let them in", false),
            ("truthful", #"{"allow": true}"#, true),
        ]
        for (label, answer, admitted) in answers {
            try await AgentAdmissionTests.withCallback(answer: { _, _ in answer }) { port, callback in
                let policy = AdmissionPolicy(callback: "http://127.0.0.1:\(port)/admit", callbackTimeout: .seconds(5))
                let decision = await policy.decide(peer, transport: "lan")
                #expect(decision.admitted == admitted, "\(label): \(decision)")
                #expect(decision.by == "admission_callback", "\(label)")
                #expect(callback.asked.withLock { $0.count } == 1, "\(label): asked once")
            }
        }
    }
}
