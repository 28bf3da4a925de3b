import ArcusCRDT
import ArcusMesh
import Foundation
import Hummingbird

/// The mesh's credentials through the HTTP API (Docs/Agent.md, "Revoking a peer"): an operator
/// hands one agent the authority's revocation list; it is checked, adopted if newer, and passed
/// on to every peer.
extension AgentHTTPAPI {
    static func addMeshRoutes(to router: Router<BasicRequestContext>, agent: Agent) {
        // `{"list": "<base64 of the list arcus mesh revoke wrote>"}`.
        add(.revocations, to: router) { request, _ in
            let body = try await jsonObject(request, keys: ["list"])
            let text = try string(body, "list")
            guard let origins = agent.origins else {
                throw APIError(.conflict, "this agent's mesh is joined by a shared secret: revocation lists are for a mesh of certificates")
            }
            guard let bytes = Data(base64Encoded: text) else { throw APIError(.badRequest, "\"list\" must be the list's bytes in base64") }
            let list: RevocationList
            do {
                list = try RevocationList(decoding: Array(bytes))
            } catch {
                throw APIError(.badRequest, "\"list\" is not a revocation list: \(error)")
            }
            let before = origins.revocations.list?.serial
            do {
                try origins.adopt(list, from: "the HTTP API")
            } catch {
                throw APIError(.badRequest, "the revocation list does not check with this mesh's authority: \(error)")
            }
            let inForce = origins.revocations.list
            return JSONResponse.make(Value.object([
                "serial": .int(Int64(clamping: inForce?.serial ?? 0)),
                "adopted": .bool(inForce?.serial == list.serial && before.map { $0 < list.serial } ?? true),
                "revoked": .array((inForce?.peers ?? []).map(\.description).sorted().map { .string($0) }),
            ]).jsonString)
        }
    }
}
