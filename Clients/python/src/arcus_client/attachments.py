"""Attachment bytes through the local API: an upload streamed from a file (never read whole), and
a download that waits while the agent fetches the blob from its peers (202), then streams it,
checking its length and its SHA-256 (the hash is the blob's name)."""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import os
import time
from typing import IO, Callable, Iterator, Optional, Union
from urllib.parse import quote

from .errors import ArcusError, WaitTimeoutError
from .models import AttachmentFetch, AttachmentToken, Progress
from .transport import Transport

PIECE = 1 << 16
ProgressCallback = Callable[[Progress], None]
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]


def _length(file: IO[bytes]) -> Optional[int]:
    """What is left of `file` to read, when it can tell."""
    try:
        position = file.tell()
        end = file.seek(0, io.SEEK_END)
        file.seek(position)
        return end - position
    except (OSError, ValueError, AttributeError):
        return None


def upload(
    transport: Transport, source: Source, *, collection: str, id: str, field: str, name: Optional[str],
    progress: Optional[ProgressCallback], content_type: str,
) -> AttachmentToken:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _send(transport, io.BytesIO(bytes(source)), len(source), collection, id, field, name, progress, content_type)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as file:
            length = os.fstat(file.fileno()).st_size
            name = name if name is not None else os.path.basename(path)
            return _send(transport, file, length, collection, id, field, name, progress, content_type)
    return _send(transport, source, _length(source), collection, id, field, name, progress, content_type)


def _send(
    transport: Transport, file: IO[bytes], length: Optional[int], collection: str, id: str, field: str,
    name: Optional[str], progress: Optional[ProgressCallback], content_type: str,
) -> AttachmentToken:
    def pieces() -> Iterator[bytes]:
        sent = 0
        if progress:
            progress(Progress("uploading", 0, length))
        while True:
            piece = file.read(PIECE if length is None else min(PIECE, length - sent))
            if not piece:
                return
            yield piece
            sent += len(piece)
            if progress:
                progress(Progress("uploading", sent, length))

    query = {"collection": collection, "id": id, "field": field}
    if name:
        query["name"] = name
    headers = {"Content-Type": content_type}
    if length is not None:
        headers["Content-Length"] = str(length)
    # Of unknown length, http.client sends the pieces chunked.
    _, data = transport.exchange("POST", "/v1/attachments", query=query, body=pieces(), headers=headers)
    return AttachmentToken.from_json(json.loads(data))


def download(
    transport: Transport, hash: str, sink: IO[bytes], *, progress: Optional[ProgressCallback], timeout: Optional[float],
    interval: float,
) -> int:
    """Writes the blob to `sink`; returns its length. While the agent answers 202 it asks again
    every `interval` seconds, for at most `timeout` seconds (None: as long as it takes)."""
    hash = hash.strip().lower()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        connection, response = transport.open("GET", "/v1/attachments/" + quote(hash, safe=""))
        try:
            if response.status == 200:
                return _receive(transport, hash, response, sink, progress)
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise transport.unreachable(error) from error
        finally:
            connection.close()
        if response.status != 202:
            raise transport.error(response.status, response.reason, data)
        fetch = AttachmentFetch.from_json(json.loads(data))
        if progress:
            progress(Progress(fetch.state, fetch.bytes_fetched, fetch.total_bytes, fetch.source))
        if deadline is not None and time.monotonic() + interval > deadline:
            raise WaitTimeoutError(
                f"attachment {hash} is still {fetch.state} after {timeout} s ({fetch.bytes_fetched} of "
                f"{fetch.total_bytes if fetch.total_bytes is not None else '?'} bytes); the agent goes on fetching it: ask again later"
            )
        time.sleep(interval)


def _receive(
    transport: Transport, hash: str, response: http.client.HTTPResponse, sink: IO[bytes], progress: Optional[ProgressCallback],
) -> int:
    length_header = response.getheader("Content-Length")
    length = int(length_header) if length_header and length_header.isdigit() else None
    digest = hashlib.sha256()
    received = 0
    if progress:
        progress(Progress("downloading", 0, length))
    while True:
        piece = response.read(PIECE)
        if not piece:
            break
        digest.update(piece)
        sink.write(piece)
        received += len(piece)
        if progress:
            progress(Progress("downloading", received, length))
    if length is not None and received != length:
        raise ArcusError(None, f"the agent sent {received} of the {length} bytes of attachment {hash}: ask again")
    if digest.hexdigest() != hash:
        raise ArcusError(None, f"the bytes the agent sent do not hash to {hash} (SHA-256 {digest.hexdigest()}): ask again")
    return received


def download_to_path(
    transport: Transport, hash: str, path: Union[str, "os.PathLike[str]"], *, progress: Optional[ProgressCallback],
    timeout: Optional[float], interval: float,
) -> int:
    """Writes PATH.partial, then renames it to PATH once whole and checked: PATH is never half a blob."""
    path = os.fspath(path)
    partial = path + ".partial"
    try:
        with open(partial, "wb") as file:
            length = download(transport, hash, file, progress=progress, timeout=timeout, interval=interval)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise
    return length
