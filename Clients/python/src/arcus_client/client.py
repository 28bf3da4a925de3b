"""`Client`: one method per route of the agent's local HTTP API (Docs/Agent.md, Routes)."""

from __future__ import annotations

import io
import os
import time
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import attachments
from .errors import ArcusError, WaitTimeoutError
from .models import (
    AttachmentFetch, AttachmentToken, PeerGraph, Progress, QueryResult, Status, Subscription, SubscriptionState,
)
from .observe import Observation
from .transport import Transport

DEFAULT_URL = "http://127.0.0.1:4747"
ProgressCallback = Callable[[Progress], None]


class Client:
    """A client of the agent at `url` (its ready line's `"http"`). Calls block, except `observe`,
    an async iterator; in async code, run the others with `asyncio.to_thread`.

    The token is the one given (`token`, or `token_file` such as the agent's DATA/api-token), else
    ARCUS_TOKEN, else the copy the agent keeps for the user who runs it, as the arcus CLI finds it.
    `environ` replaces os.environ for that lookup. `timeout` bounds each network operation, in
    seconds. Errors are `ArcusError`s carrying the agent's message."""

    def __init__(
        self, url: str = DEFAULT_URL, *, token: Optional[str] = None, token_file: Optional[Union[str, "os.PathLike[str]"]] = None,
        timeout: float = 60.0, environ: Optional[Mapping[str, str]] = None,
    ) -> None:
        self._transport = Transport(
            url, token=token, token_file=os.fspath(token_file) if token_file is not None else None, timeout=timeout, environ=environ)

    @property
    def url(self) -> str:
        return self._transport.url

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    # DQL

    def execute(
        self, statement: str, args: Optional[Mapping[str, Any]] = None, *, wait_synced: Optional[Sequence[str]] = None,
        timeout: Optional[float] = None,
    ) -> QueryResult:
        """Runs one DQL statement, with `args` for its `:name` placeholders. With `wait_synced`
        (peer ids or names), answers once those peers hold the write, or raises `UnsyncedError`
        after `timeout` seconds (the agent's default: 30); the write is committed either way."""
        body: Dict[str, Any] = {"statement": statement, "args": dict(args or {})}
        wait = None
        if wait_synced is not None:
            body["wait_synced"] = list(wait_synced)
            if timeout is not None:
                body["timeout"] = timeout
            wait = (timeout if timeout is not None else 30.0) + self._transport.timeout
        return QueryResult.from_json(self._transport.call("POST", "/v1/execute", json_body=body, timeout=wait))

    def observe(self, query: str, args: Optional[Mapping[str, Any]] = None) -> Observation:
        """`async for event in client.observe("SELECT …")`: the result now, then again after each
        change. Use `async with client.observe(…) as events:` to close it when leaving the loop."""
        return Observation(self._transport, query, args)

    # Subscriptions

    def subscribe(self, query: str, args: Optional[Mapping[str, Any]] = None) -> Subscription:
        """Asks peers for the documents `query` selects, from now on and across restarts (`""`: the
        whole store). Subscribing to the same query again gives the same id."""
        answer = self._transport.call("POST", "/v1/subscriptions", json_body={"query": query, "args": dict(args or {})})
        return Subscription(answer["id"], answer["query"])

    def subscriptions(self) -> List[SubscriptionState]:
        """Every active subscription, with its sync progress per connected peer."""
        return [SubscriptionState.from_json(s) for s in self._transport.call("GET", "/v1/subscriptions")["subscriptions"]]

    def subscription(self, id: int) -> SubscriptionState:
        """One subscription's state; `ArcusError` (404) if it is not active."""
        for state in self.subscriptions():
            if state.id == id:
                return state
        raise ArcusError(404, f"no active subscription {id}")

    def unsubscribe(self, id: int) -> None:
        """Cancels the subscription; `ArcusError` (404) if it is not active."""
        self._transport.call("DELETE", f"/v1/subscriptions/{int(id)}")

    def wait_caught_up(
        self, id: int, *, timeout: Optional[float] = None, progress: Optional[Callable[[SubscriptionState], None]] = None,
        interval: float = 0.25,
    ) -> SubscriptionState:
        """Waits until every connected peer has sent what it has of subscription `id` (as
        `arcus subscribe --wait`), handing each poll's state to `progress`. Past `timeout` seconds,
        `WaitTimeoutError`: the subscription stays and goes on syncing."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.subscription(id)
            if progress:
                progress(state)
            if state.sync and all(p.caught_up for p in state.sync):
                return state
            if deadline is not None and time.monotonic() + interval > deadline:
                peers = ", ".join(f"{p.label}: {p.documents_received} documents" for p in state.sync) or "no peer connected"
                raise WaitTimeoutError(
                    f"subscription #{id} is not caught up after {timeout} s ({peers}); it stays registered and goes on syncing")
            time.sleep(interval)

    # The mesh and the agent

    def peers(self) -> PeerGraph:
        """The presence graph: this agent first, then every peer it knows, and the links."""
        return PeerGraph.from_json(self._transport.call("GET", "/v1/peers"))

    def status(self) -> Status:
        """The agent at a glance, as `arcus status` prints it."""
        return Status.from_json(self._transport.call("GET", "/v1/status"))

    def metrics(self) -> str:
        """The Prometheus text of `GET /metrics`."""
        return self._transport.exchange("GET", "/metrics")[1].decode("utf-8")

    # Attachments

    def upload_attachment(
        self, source: attachments.Source, *, collection: str, id: str, field: str, name: Optional[str] = None,
        progress: Optional[ProgressCallback] = None, content_type: str = "application/octet-stream",
    ) -> AttachmentToken:
        """Stores `source` (a path, bytes, or a binary file, read a piece at a time) as an attachment
        and sets its token at `field` (dotted for nested fields) of document `id` of `collection`,
        created when absent. `name` (by default a path's file name) goes into the token's metadata.
        `progress` gets `Progress("uploading", sent, total)`."""
        return attachments.upload(
            self._transport, source, collection=collection, id=id, field=field, name=name, progress=progress, content_type=content_type)

    def download_attachment(
        self, hash: str, destination: Union[str, "os.PathLike[str]", IO[bytes]], *, progress: Optional[ProgressCallback] = None,
        timeout: Optional[float] = 300.0, interval: float = 0.25,
    ) -> int:
        """Writes attachment `hash` to `destination` (a path: written whole or not at all; or a
        binary file); returns its length. While the agent fetches it from peers, asks again every
        `interval` s for at most `timeout` s (None: no bound), reporting the fetch to `progress`
        (`waiting`, `fetching`, `relaying`), then `downloading` as the bytes arrive. The bytes are
        checked against the hash."""
        if isinstance(destination, (str, os.PathLike)):
            return attachments.download_to_path(self._transport, hash, destination, progress=progress, timeout=timeout, interval=interval)
        return attachments.download(self._transport, hash, destination, progress=progress, timeout=timeout, interval=interval)

    def read_attachment(
        self, hash: str, *, progress: Optional[ProgressCallback] = None, timeout: Optional[float] = 300.0, interval: float = 0.25,
    ) -> bytes:
        """Attachment `hash`'s bytes, as `download_attachment` gets them."""
        buffer = io.BytesIO()
        attachments.download(self._transport, hash, buffer, progress=progress, timeout=timeout, interval=interval)
        return buffer.getvalue()

    def attachment_fetches(self) -> List[AttachmentFetch]:
        """The fetches from peers under way in the agent."""
        return [AttachmentFetch.from_json(f) for f in self._transport.call("GET", "/v1/attachments")["fetches"]]
