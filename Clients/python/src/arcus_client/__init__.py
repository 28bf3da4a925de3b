"""A client for the local HTTP API of an Arcus agent (`arcus agent`; Docs/Agent.md).

    from arcus_client import Client
    client = Client("http://127.0.0.1:4747")
    client.execute("INSERT INTO cars DOCUMENTS (:car)", {"car": {"_id": "a", "color": "blue"}})
"""

from .client import DEFAULT_URL, Client
from .errors import (
    AgentUnreachableError, ArcusError, TokenError, UnauthorizedError, UnsyncedError, WaitTimeoutError,
)
from .models import (
    AttachmentFetch, AttachmentToken, Diff, Link, Move, ObserveEvent, Peer, PeerGraph, Progress, QueryResult, Status,
    StoreFigures, Subscription, SubscriptionState, SyncFigures, SyncProgress,
)
from .observe import Observation

__all__ = [
    "DEFAULT_URL", "Client", "Observation",
    "ArcusError", "AgentUnreachableError", "TokenError", "UnauthorizedError", "UnsyncedError", "WaitTimeoutError",
    "AttachmentFetch", "AttachmentToken", "Diff", "Link", "Move", "ObserveEvent", "Peer", "PeerGraph", "Progress",
    "QueryResult", "Status", "StoreFigures", "Subscription", "SubscriptionState", "SyncFigures", "SyncProgress",
]
__version__ = "0.1.0"
