import ArcusCRDT
import ArcusMesh
import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

/// The connection policy: asked once a peer has proved who it is (the handshake) and before its
/// link joins a session with it. A peer the mesh credential admits is refused here by a
/// `admission_deny` rule, by not matching any `admission_allow` rule (when there are some), or
/// by the `admission_callback`, an HTTP endpoint of the operator's that answers
/// `{"allow": true|false, "reason": "…"}`. A callback that does not answer within its timeout
/// (10 s by default), or answers anything else, refuses: the policy fails closed.
///
/// Each peer's latest decision is kept (for `GET /v1/peers` and `arcus peers`); a callback's
/// answer stands for a minute, so a peer's several links, or a peer that keeps dialling, do
/// not each ask it again.
final class AdmissionPolicy: Sendable {
    struct Decision: Sendable, Equatable {
        let admitted: Bool
        /// What decided: `deny RULE`, `allow RULE`, `admission_allow` (matched no rule of it),
        /// `admission_callback`, or `default` (no rule refused it, and there is no callback).
        let by: String
        let reason: String?
    }

    struct Record: Sendable {
        let peer: PeerID
        let name: String?
        let transport: String
        let decision: Decision
        let at: Date
    }

    let allow: [AdmissionRule]
    let deny: [AdmissionRule]
    let callback: String?
    let callbackTimeout: Duration

    static let defaultCallbackTimeout: Duration = .seconds(10)
    /// How long a callback's answer stands for its peer.
    static let callbackMemory: Duration = .seconds(60)
    /// Peers whose latest decision is kept.
    static let recordsKept = 256
    /// The most of a callback's answer read.
    static let largestAnswer = 64 << 10

    private let answers = Mutex<[PeerID: (decision: Decision, at: ContinuousClock.Instant)]>([:])
    private let records = Mutex<[PeerID: Record]>([:])

    init(allow: [AdmissionRule] = [], deny: [AdmissionRule] = [], callback: String? = nil, callbackTimeout: Duration = defaultCallbackTimeout) {
        self.allow = allow
        self.deny = deny
        self.callback = callback
        self.callbackTimeout = callbackTimeout
    }

    var isEmpty: Bool { allow.isEmpty && deny.isEmpty && callback == nil }

    /// Decides on `peer`, whose link came over `transport`, and records the decision.
    func decide(_ peer: AuthenticatedPeer, transport: String) async -> Decision {
        let decision = await decision(on: peer, transport: transport)
        records.withLock { records in
            if records[peer.peerID] == nil, records.count >= Self.recordsKept,
               let oldest = records.min(by: { $0.value.at < $1.value.at })?.key {
                records[oldest] = nil
            }
            records[peer.peerID] = Record(peer: peer.peerID, name: peer.name, transport: transport, decision: decision, at: Date())
        }
        return decision
    }

    private func decision(on peer: AuthenticatedPeer, transport: String) async -> Decision {
        if let rule = deny.first(where: { $0.matches(peer) }) { return Decision(admitted: false, by: "deny \(rule)", reason: nil) }
        if !allow.isEmpty {
            guard let rule = allow.first(where: { $0.matches(peer) }) else {
                return Decision(admitted: false, by: "admission_allow", reason: "it matches none of \(allow.map(\.description).joined(separator: ", "))")
            }
            if callback == nil { return Decision(admitted: true, by: "allow \(rule)", reason: nil) }
        }
        guard let callback else { return Decision(admitted: true, by: "default", reason: "no rule refused it") }
        let now = ContinuousClock.now
        if let kept = answers.withLock({ $0[peer.peerID] }), now - kept.at < Self.callbackMemory { return kept.decision }
        let decision = await ask(callback, about: peer, transport: transport)
        answers.withLock { answers in
            answers = answers.filter { now - $0.value.at < Self.callbackMemory }
            answers[peer.peerID] = (decision, now)
        }
        return decision
    }

    /// What the callback says of `peer`: `POST` of the peer's id, certified name, transport and
    /// certificate's permissions.
    private func ask(_ url: String, about peer: AuthenticatedPeer, transport: String) async -> Decision {
        var certificate = Value.null
        if let certified = peer.certificate {
            certificate = .object([
                "name": .string(certified.name),
                "reads": .array(certified.permissions.read.names.map(Value.string)),
                "writes": .array(certified.permissions.write.names.map(Value.string)),
                "relay": .bool(certified.permissions.relay),
                "expires_at": certified.expiresAt.map { .double($0.timeIntervalSince1970) } ?? .null,
            ])
        }
        let body = Value.object([
            "peer": .string(peer.peerID.description), "name": peer.name.map(Value.string) ?? .null,
            "transport": .string(transport), "certificate": certificate,
        ]).jsonString
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let refused = { (reason: String) in Decision(admitted: false, by: "admission_callback", reason: reason) }
        let seconds = Int(callbackTimeout.inSeconds)
        let answer: (status: UInt, text: String)
        do {
            answer = try await HTTPClient.shared.execute(request, timeout: .milliseconds(Int64(callbackTimeout.inSeconds * 1000))).collected(upTo: Self.largestAnswer)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return refused("the callback gave no answer within \(seconds) s")
        } catch {
            return refused("the callback could not be asked: \(error)")
        }
        guard (200..<300).contains(answer.status) else { return refused("the callback answered HTTP \(answer.status)") }
        guard case .object(let fields)? = try? Value(json: answer.text), case .bool(let allowed)? = fields["allow"] else {
            return refused("the callback's answer is not {\"allow\": true|false}")
        }
        return Decision(admitted: allowed, by: "admission_callback", reason: fields["reason"]?.stringValue.map { String($0.prefix(200)) })
    }

    /// Each peer's latest decision, the latest first.
    var decisions: [Record] { records.withLock { $0.values.sorted { $0.at > $1.at } } }
}

private extension HTTPClientResponse {
    func collected(upTo limit: Int) async throws -> (status: UInt, text: String) {
        (status.code, String(buffer: try await body.collect(upTo: limit)))
    }
}
