"""The HTTP plumbing every call shares: the agent's address, the token on each request, and the
agent's `{"error": …}` turned into an `ArcusError`. Standard library only (http.client): one
connection per request, which for an agent on the same machine costs next to nothing."""

from __future__ import annotations

import http.client
import json
import os
import threading
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Union
from urllib.parse import quote, urlencode, urlsplit

from . import credential as credentials
from .errors import AgentUnreachableError, ArcusError, UnauthorizedError, UnsyncedError
from .models import QueryResult

Body = Union[bytes, Iterable[bytes], None]


class Transport:
    def __init__(
        self, url: str, *, token: Optional[str], token_file: Optional[str], timeout: float,
        environ: Optional[Mapping[str, str]],
    ) -> None:
        text = url.strip().rstrip("/")
        parts = urlsplit(text)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"{url!r} is not an http:// URL, such as http://127.0.0.1:4747")
        self.url = text
        self.host = parts.hostname
        self.port = parts.port or 80
        self.base_path = parts.path
        self.timeout = timeout
        self._environ = environ if environ is not None else os.environ
        self._lock = threading.Lock()
        self._credential = credentials.resolve(
            text, self.host, self.port, token=token, token_file=token_file, environ=self._environ)

    @property
    def credential(self) -> credentials.Credential:
        """The credential; looked for again while none was found (the agent may have started
        since), as the CLI looks for it at each command."""
        with self._lock:
            if self._credential.token is None:
                self._credential = credentials.resolve(self.url, self.host, self.port, environ=self._environ)
            return self._credential

    def target(self, path: str, query: Optional[Mapping[str, str]] = None) -> str:
        """The request target: `path` under the URL's, with `query` escaped ("+" too, which a
        server reads as a space)."""
        return self.base_path + path + ("?" + urlencode(query, quote_via=quote) if query else "")

    def headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        """No Origin, and Host from the URL (http.client adds it): the agent answers only
        requests addressed to a loopback name, from no web page."""
        headers = {"User-Agent": "arcus-client-python"}
        token = self.credential.token
        if token:
            headers["Authorization"] = "Bearer " + token
        headers.update(extra or {})
        return headers

    def open(
        self, method: str, path: str, *, query: Optional[Mapping[str, str]] = None, body: Body = None,
        headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
    ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Sends a request; the caller reads the response and closes the connection."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)
        try:
            connection.request(method, self.target(path, query), body=body, headers=self.headers(headers))
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise self.unreachable(error) from error

    def call(
        self, method: str, path: str, *, json_body: Optional[Mapping[str, Any]] = None,
        query: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
    ) -> Any:
        """A request whose answer is JSON; any status but 2xx raises the agent's error."""
        body = None
        headers = {}
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        status, data = self.exchange(method, path, query=query, body=body, headers=headers, timeout=timeout)
        return json.loads(data) if data.strip() else None

    def exchange(
        self, method: str, path: str, *, query: Optional[Mapping[str, str]] = None, body: Body = None,
        headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
    ) -> Tuple[int, bytes]:
        """A whole request and its whole 2xx answer; else the agent's error."""
        connection, response = self.open(method, path, query=query, body=body, headers=headers, timeout=timeout)
        try:
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise self.unreachable(error) from error
        finally:
            connection.close()
        if not 200 <= response.status < 300:
            raise self.error(response.status, response.reason, data)
        return response.status, data

    def unreachable(self, error: BaseException) -> AgentUnreachableError:
        return AgentUnreachableError(f"no agent at {self.url} ({error}): start one with `arcus agent --data DIR`")

    def error(self, status: int, reason: str, data: bytes) -> ArcusError:
        """The agent's `{"error": …}` message as an `ArcusError`; for a refused token, with what was
        tried and what to do; for a write that did not reach every peer named, `UnsyncedError`."""
        text = data.decode("utf-8", "replace").strip()
        document: Any = None
        try:
            document = json.loads(text)
        except ValueError:
            pass
        message = text
        if isinstance(document, dict) and isinstance(document.get("error"), str):
            message = document["error"]
        if not message:
            message = f"the agent answered {status} {reason}".strip()
        if status == 401:
            return UnauthorizedError(status, message + "\n" + self.credential.hint)
        if status == 504 and isinstance(document, dict) and isinstance(document.get("unsynced"), list):
            return UnsyncedError(status, message, [str(p) for p in document["unsynced"]], QueryResult.from_json(document))
        return ArcusError(status, message)
