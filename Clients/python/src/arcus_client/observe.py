"""`GET /v1/observe` as an async iterator, on asyncio streams (standard library): the agent sends
server-sent events over a chunked HTTP/1.1 answer that lasts as long as the observer does, which
http.client cannot hand to asyncio, so the few lines of HTTP are spoken here."""

from __future__ import annotations

import asyncio
import json
from types import TracebackType
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Tuple, Type

from .errors import ArcusError
from .models import ObserveEvent
from .transport import Transport


class EventStream:
    """Server-sent events out of the bytes of the stream: `event:` and `data:` lines, an event
    ending at an empty line (the WHATWG rules, as much as the agent uses)."""

    def __init__(self) -> None:
        self._pending = b""
        self._kind = ""
        self._data: List[str] = []
        self.events: List[Tuple[str, str]] = []

    def feed(self, data: bytes) -> None:
        self._pending += data
        while True:
            end = self._pending.find(b"\n")
            if end < 0:
                return
            line = self._pending[:end].rstrip(b"\r").decode("utf-8", "replace")
            self._pending = self._pending[end + 1:]
            if not line:
                if self._data:
                    self.events.append((self._kind or "message", "\n".join(self._data)))
                self._kind, self._data = "", []
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    self._kind = value
                elif name == "data":
                    self._data.append(value)


class Observation:
    """The events of one observer: the current result at once, then one after each commit that
    changes it, with `async for` (or `anext(observation)`, Python 3.10+). The iteration ends when the agent
    stops. Leaving an `async for` (`break`, an exception) closes the connection, which cancels the
    observer in the agent; so does leaving `async with`, or `aclose()`."""

    def __init__(self, transport: Transport, query: str, args: Optional[Mapping[str, Any]]) -> None:
        parameters: Dict[str, str] = {"q": query}
        if args:
            parameters["args"] = json.dumps(args)
        self._transport = transport
        self._target = transport.target("/v1/observe", parameters)
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._chunked = False
        self._remaining: Optional[int] = None
        self._events = EventStream()
        self._done = False

    def __aiter__(self) -> AsyncIterator[ObserveEvent]:
        # A generator, so that asyncio closes it (and the connection) as soon as a loop leaves it.
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ObserveEvent]:
        try:
            while True:
                try:
                    event = await self.__anext__()
                except StopAsyncIteration:
                    return
                yield event
        finally:
            await self.aclose()

    async def __aenter__(self) -> Observation:
        await self.open()
        return self

    async def __aexit__(
        self, kind: Optional[Type[BaseException]], error: Optional[BaseException], trace: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    async def __anext__(self) -> ObserveEvent:
        if self._reader is None and not self._done:
            await self.open()
        while True:
            while self._events.events:
                kind, data = self._events.events.pop(0)
                if kind == "result":
                    return ObserveEvent.from_json(json.loads(data))
            piece = None if self._done else await self._piece()
            if piece is None:
                await self.aclose()
                raise StopAsyncIteration
            self._events.feed(piece)

    async def open(self) -> None:
        """Connects and registers the observer; raises the agent's error (a query that is not a
        SELECT, a refused token) at once. Iterating opens it too."""
        if self._reader is not None or self._done:
            return
        transport = self._transport
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(transport.host, transport.port), transport.timeout)
        except (OSError, asyncio.TimeoutError) as error:
            raise transport.unreachable(error) from error
        self._reader, self._writer = reader, writer
        host = f"[{transport.host}]" if ":" in transport.host else transport.host
        headers = {"Host": f"{host}:{transport.port}", "Accept": "text/event-stream", **transport.headers()}
        lines = [f"GET {self._target} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items()), "", ""]
        try:
            writer.write("\r\n".join(lines).encode("utf-8"))
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
            await self.aclose()
            raise transport.unreachable(error) from error
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = status_line.split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        fields = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        self._chunked = "chunked" in fields.get("transfer-encoding", "").lower()
        length = fields.get("content-length", "")
        self._remaining = int(length) if length.isdigit() else None
        if status != 200:
            body = b""
            try:
                while (piece := await self._piece()) is not None:
                    body += piece
            except ArcusError:
                pass
            await self.aclose()
            raise transport.error(status, parts[2] if len(parts) > 2 else "", body)

    async def _piece(self) -> Optional[bytes]:
        """The next bytes of the body; None at its end."""
        reader = self._reader
        assert reader is not None
        try:
            if self._chunked:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return None
                data = await reader.readexactly(size + 2)
                return data[:-2]
            if self._remaining is not None:
                if self._remaining == 0:
                    return None
                data = await reader.read(min(self._remaining, 1 << 16))
                if not data:
                    raise asyncio.IncompleteReadError(b"", self._remaining)
                self._remaining -= len(data)
                return data
            return (await reader.read(1 << 16)) or None
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
            await self.aclose()
            raise self._transport.unreachable(error) from error

    async def aclose(self) -> None:
        """Closes the connection: the agent cancels the observer."""
        self._done = True
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass
