// What an app needs besides `EmbeddedAgent`: values and documents (ArcusCRDT), the store with
// DQL, observers and the builder API (ArcusStore), sync progress, and the presence graph.
@_exported import ArcusCRDT
@_exported import ArcusStore
@_exported import struct ArcusSync.SubscriptionSyncProgress
@_exported import struct ArcusSync.AttachmentFetchStatus
@_exported import struct ArcusMesh.PresenceGraph
@_exported import struct ArcusMesh.PeerID
