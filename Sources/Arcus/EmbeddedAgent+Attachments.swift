import ArcusAgent
import ArcusStore
import Foundation

extension EmbeddedAgent {
    /// Stores the file at `path` as an attachment (streamed, never loaded whole) and sets its
    /// token at `field` (dotted for nested fields: `photo.full`) of document `id` in
    /// `collection`, created when absent. Peers that sync the document fetch the bytes when
    /// they ask for them. `name` goes into the token's metadata.
    @discardableResult
    public func attach(file path: String, to collection: String, id: String, field: String, name: String? = nil) throws(EmbeddedAgentError) -> AttachmentToken {
        do throws(AttachmentRefusal) {
            return try agent.attach(file: path, collection: collection, id: id, field: field, name: name)
        } catch {
            throw EmbeddedAgentError(error.description)
        }
    }

    /// The attachment's bytes: from this store when it has them, else fetched from connected
    /// peers in chunks (resuming where an earlier attempt stopped) and checked against the
    /// token's hash, `progress` told as they arrive. Waits while no connected peer has them;
    /// cancel the task to give up.
    public func attachmentData(_ token: AttachmentToken, progress: (@Sendable (AttachmentProgress) -> Void)? = nil) async throws -> Data {
        try await agent.engine.fetchAttachment(token, progress: progress)
    }

    /// The attachment fetches under way (this agent's and those it relays for peers).
    public var attachmentFetches: [AttachmentFetchStatus] { agent.engine.attachmentFetches }
}
