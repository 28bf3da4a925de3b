"""What the agent answers with, as dataclasses (Docs/Agent.md, Routes; GET /v1/openapi.json).
Keys the agent adds later are ignored, so that a newer agent does not break an older client."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

JSON = Dict[str, Any]


@dataclass(frozen=True)
class QueryResult:
    """`POST /v1/execute`: what `arcus exec` prints."""

    items: List[Any]
    mutated_document_ids: List[Any]
    #: After a write that changed something: the change-log position of its last change.
    commit_id: Optional[int] = None
    #: With `wait_synced`: the peers, as named, that hold the write.
    synced: Optional[List[str]] = None

    @classmethod
    def from_json(cls, o: JSON) -> QueryResult:
        return cls(list(o.get("items", [])), list(o.get("mutatedDocumentIDs", [])), o.get("commit_id"), o.get("synced"))


@dataclass(frozen=True)
class Move:
    from_index: int
    to_index: int


@dataclass(frozen=True)
class Diff:
    """How an event's items differ from the previous event's: `insertions` and `updates` index the
    new items, `deletions` the previous ones."""

    insertions: List[int]
    deletions: List[int]
    updates: List[int]
    moves: List[Move]

    @classmethod
    def from_json(cls, o: JSON) -> Diff:
        moves = [Move(m["from"], m["to"]) for m in o.get("moves", [])]
        return cls(list(o.get("insertions", [])), list(o.get("deletions", [])), list(o.get("updates", [])), moves)


@dataclass(frozen=True)
class ObserveEvent:
    """One `result` event of `GET /v1/observe`: the whole current result, and how it changed."""

    items: List[Any]
    diff: Diff

    @classmethod
    def from_json(cls, o: JSON) -> ObserveEvent:
        return cls(list(o.get("items", [])), Diff.from_json(o.get("diff", {})))


@dataclass(frozen=True)
class Subscription:
    """`POST /v1/subscriptions`: the subscription's id (the same for the same query) and query."""

    id: int
    query: str


@dataclass(frozen=True)
class SyncProgress:
    """A subscription's sync with one connected peer, since this agent last told it what it has.
    The `…_to_go` figures are what the peer says is left; None until its first batch."""

    #: The peer's id, as `peers()` shows it (its site when the agent's presence graph does not know it).
    peer: str
    label: str
    caught_up: bool
    documents_received: int
    bytes_received: int
    documents_to_go: Optional[int]
    bytes_to_go: Optional[int]
    #: Received over received plus to go, 0 to 1; None until the peer says what is left.
    fraction: Optional[float]
    #: Seconds since 1970.
    started_at: Optional[float]
    #: The peer's site: the first 16 hex digits of its id, as the agent's sync logs name it.
    site: Optional[str] = None

    @classmethod
    def from_json(cls, o: JSON) -> SyncProgress:
        return cls(
            o["peer"], o.get("label") or o["peer"], bool(o.get("caught_up")), o.get("documents_received", 0),
            o.get("bytes_received", 0), o.get("documents_to_go"), o.get("bytes_to_go"), o.get("fraction"), o.get("started_at"),
            o.get("site"),
        )


@dataclass(frozen=True)
class SubscriptionState:
    """A subscription in `GET /v1/subscriptions`, with its sync progress per connected peer."""

    id: int
    query: str
    args: JSON
    #: Every connected peer is caught up (False with no peer).
    caught_up: bool
    sync: List[SyncProgress]

    @classmethod
    def from_json(cls, o: JSON) -> SubscriptionState:
        return cls(o["id"], o["query"], dict(o.get("args") or {}), bool(o.get("caught_up")),
                   [SyncProgress.from_json(p) for p in o.get("sync", [])])


@dataclass(frozen=True)
class Peer:
    id: str
    name: Optional[str]
    #: This agent (listed first).
    is_self: bool
    metadata: Dict[str, str]
    #: Present for every peer a route reaches.
    hops: Optional[int] = None
    next_hop: Optional[str] = None

    @classmethod
    def from_json(cls, o: JSON) -> Peer:
        return cls(o["id"], o.get("name"), bool(o.get("self")), dict(o.get("metadata") or {}), o.get("hops"), o.get("next_hop"))


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    transport: str
    active: bool
    rtt_ms: Optional[int]
    #: Bytes per second; None until measured.
    throughput: Optional[int]

    @classmethod
    def from_json(cls, o: JSON) -> Link:
        return cls(o["a"], o["b"], o["transport"], bool(o.get("active")), o.get("rtt_ms"), o.get("throughput"))


@dataclass(frozen=True)
class PeerGraph:
    """`GET /v1/peers`: the presence graph as this agent sees it."""

    self_id: str
    version: int
    peers: List[Peer]
    links: List[Link]
    #: The connection policy's latest decision on each peer it was asked about, newest first.
    admission: List[JSON] = field(default_factory=list)

    @classmethod
    def from_json(cls, o: JSON) -> PeerGraph:
        return cls(o["self"], o.get("version", 0), [Peer.from_json(p) for p in o.get("peers", [])],
                   [Link.from_json(link) for link in o.get("links", [])], list(o.get("admission", [])))

    def peer(self, name_or_id: str) -> Optional[Peer]:
        """The peer with this id, or the name it announces."""
        return next((p for p in self.peers if name_or_id in (p.id, p.name)), None)


@dataclass(frozen=True)
class AttachmentToken:
    """`POST /v1/attachments`: the token now at `field` of document `id`, and where it went."""

    hash: str
    length: int
    metadata: Dict[str, str]
    collection: str
    id: str
    field: str

    @classmethod
    def from_json(cls, o: JSON) -> AttachmentToken:
        return cls(o["_attachment"], o["len"], dict(o.get("metadata") or {}), o["collection"], o["id"], o["field"])


@dataclass(frozen=True)
class AttachmentFetch:
    """A fetch from peers under way (`GET /v1/attachments`, or a 202 of `GET /v1/attachments/{hash}`).
    `state` is `waiting` (no connected peer serves it), `fetching` (from `source`) or `relaying`."""

    hash: str
    state: str
    bytes_fetched: int
    total_bytes: Optional[int]
    source: Optional[str]

    @classmethod
    def from_json(cls, o: JSON) -> AttachmentFetch:
        return cls(o["hash"], o.get("state", "waiting"), o.get("bytes_fetched", 0), o.get("total_bytes"), o.get("source"))


@dataclass(frozen=True)
class Progress:
    """Handed to a progress callback. `phase` is `uploading` or `downloading` (bytes crossing the
    local API), or `waiting`, `fetching`, `relaying` (the agent fetching the blob from peers first)."""

    phase: str
    done: int
    #: None when not known.
    total: Optional[int]
    #: The peer the agent fetches from, while `fetching`.
    source: Optional[str] = None


@dataclass(frozen=True)
class StoreFigures:
    bytes: int
    #: Live documents; None when the agent could not count them (then `error` says why).
    documents: Optional[int]
    collections: Dict[str, int]
    error: Optional[str] = None

    @classmethod
    def from_json(cls, o: JSON) -> StoreFigures:
        collections = {c["name"]: c["documents"] for c in o.get("collections", [])}
        return cls(o.get("bytes", 0), o.get("documents"), collections, o.get("error"))


@dataclass(frozen=True)
class SyncFigures:
    sessions: int
    lag_seconds: float
    bytes_sent: int
    bytes_received: int
    frames_sent: int
    frames_received: int

    @classmethod
    def from_json(cls, o: JSON) -> SyncFigures:
        return cls(o.get("sessions", 0), o.get("lag_seconds", 0.0), o.get("bytes_sent", 0), o.get("bytes_received", 0),
                   o.get("frames_sent", 0), o.get("frames_received", 0))


@dataclass(frozen=True)
class Status:
    """`GET /v1/status`: the agent at a glance (what `arcus status` prints). `raw` is the whole
    answer, for the parts not modelled here."""

    name: str
    peer: str
    data: str
    durability: str
    transports: List[str]
    transports_failed: Dict[str, str]
    uptime_seconds: float
    store: StoreFigures
    sync: SyncFigures
    subscriptions: List[SubscriptionState]
    attachments: List[AttachmentFetch]
    graph: PeerGraph
    raw: JSON = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, o: JSON) -> Status:
        return cls(
            o["name"], o["peer"], o.get("data", ""), o.get("durability", ""), list(o.get("transports", [])),
            dict(o.get("transports_failed") or {}), o.get("uptime_seconds", 0.0), StoreFigures.from_json(o.get("store", {})),
            SyncFigures.from_json(o.get("sync", {})), [SubscriptionState.from_json(s) for s in o.get("subscriptions", [])],
            [AttachmentFetch.from_json(a) for a in o.get("attachments", [])], PeerGraph.from_json(o["graph"]), o,
        )
