"""The errors the client raises: each carries the agent's own message, which says what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .models import QueryResult


class ArcusError(Exception):
    """The agent refused a request: its HTTP status and its `{"error": …}` message.

    `status` is None when no agent answered at all (see the subclasses).
    """

    def __init__(self, status: Optional[int], message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, message={self.message!r})"


class UnauthorizedError(ArcusError):
    """401: no token, or not this agent's. The message ends with what the client tried and how to
    give the token, as the CLI prints it."""


class UnsyncedError(ArcusError):
    """504 after `execute(..., wait_synced=[…])`: the write is committed here, but the peers in
    `unsynced` did not hold it before the timeout. `result` is the write's own result."""

    def __init__(self, status: int, message: str, unsynced: list[str], result: QueryResult) -> None:
        super().__init__(status, message)
        self.unsynced = unsynced
        self.result = result


class AgentUnreachableError(ArcusError):
    """Nothing answered at the agent's URL (or the connection broke): status None."""

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


class TokenError(ArcusError):
    """The token given (a token file, ARCUS_TOKEN, the token itself) is not one: raised before any
    request, status None, as the CLI refuses it before it asks the agent."""

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


class WaitTimeoutError(ArcusError, TimeoutError):
    """A wait this client polls for (a subscription catching up, an attachment being fetched)
    outlasted its timeout. What was waited for goes on in the agent."""

    def __init__(self, message: str) -> None:
        ArcusError.__init__(self, None, message)
