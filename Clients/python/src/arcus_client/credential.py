"""Which token to send, found as the arcus CLI finds it (Sources/ArcusAgent/Agent/AgentCredential.swift):

1. the token given, or the file given (such as the agent's DATA/api-token);
2. ARCUS_TOKEN, the 64 hex digits themselves;
3. for an agent on this machine, the copy the agent keeps for the user who runs it, used only when
   that user owns the socket listening on the URL's port.

Without any, requests go without a token, and the agent's 401 comes back with `hint` added."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from typing import Mapping, Optional

from . import token_files
from .errors import TokenError

GIVE = (
    "give the token with Client(token_file=\"DIR/api-token\") (DIR: the agent's data directory), "
    "Client(token=…) or ARCUS_TOKEN=<64 hex digits>"
)


@dataclass(frozen=True)
class Credential:
    """The token to send (64 lowercase hex digits), if one was found, and what to tell the user
    when the agent refuses it (or its absence)."""

    token: Optional[str]
    hint: str


def _user_name(uid: int) -> Optional[str]:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def resolve(
    url: str, host: str, port: int, *, token: Optional[str] = None, token_file: Optional[str] = None,
    environ: Mapping[str, str],
) -> Credential:
    """The credential for the agent at `url` (whose host and port are given apart)."""
    if token is not None:
        parsed = token_files.parse_token(token)
        if parsed is None:
            raise TokenError("the token given is not an API token: it must be the 64 hex digits of the agent's DIR/api-token")
        return Credential(parsed, f"the token given (Client(token=…)) is not this agent's; {GIVE} of the agent at {url}")
    if token_file is not None:
        return Credential(_read_given(token_file), f"the token in {token_file} (token_file) is not this agent's; {GIVE} of the agent at {url}")
    text = environ.get("ARCUS_TOKEN", "")
    if text:
        parsed = token_files.parse_token(text)
        if parsed is None:
            raise TokenError("ARCUS_TOKEN is not an API token: it must be the 64 hex digits of the agent's DIR/api-token")
        return Credential(parsed, f"the token in ARCUS_TOKEN is not this agent's; {GIVE}")
    return _user_copy(url, host, port, environ)


def _read_given(path: str) -> str:
    """The token in the file the caller named: their choice, so its mode is theirs to judge."""
    try:
        with open(path, "rb") as file:
            data = file.read(257)
    except OSError:
        raise TokenError(
            f"cannot read the token file {path} (token_file): check that it exists and that you may read it "
            "(it is mode 0600, the agent's user's)"
        ) from None
    token = token_files.parse_token(data.decode("utf-8", "replace")) if len(data) <= 256 else None
    if token is None:
        raise TokenError(f"{path} (token_file) does not hold an API token: give the agent's DIR/api-token, 64 hex digits")
    return token


def _user_copy(url: str, host: str, port: int, environ: Mapping[str, str]) -> Credential:
    none = Credential(None, f"arcus_client has no token for {url}: {GIVE}")
    name = token_files.file_name(host, port)
    if name is None:
        return none
    me = os.geteuid()
    owner = me
    if name.startswith("localhost:"):
        owners = token_files.listening_owners(port)
        if owners is not None:
            if not owners:
                return none  # Nothing listens: the request fails as "no agent at URL".
            if len(owners) > 1:
                return Credential(None, f"processes of several users listen on port {port}, so arcus_client sends none of their tokens: {GIVE}")
            owner = next(iter(owners))
    who = "you" if owner == me else f"user {_user_name(owner) or owner} (uid {owner})"
    directory = token_files.directory(owner, environ)
    if directory is None:
        return Credential(None, f"arcus_client cannot tell where {who} keep agents' tokens (no home directory): {GIVE}")
    path = os.path.join(directory, name)
    found = token_files.read(path, owner)
    if found.kind == "found":
        return Credential(found.detail, (
            f"the token in {path} is not this agent's (an agent that stopped without removing it?); {GIVE}, "
            "or restart the agent, which rewrites it"
        ))
    if found.kind == "absent":
        return Credential(None, (
            f"the agent at {url} runs as {who}, and no token for it is in {path}, where the agent keeps one "
            f"for its user: {GIVE}"
        ))
    if found.kind == "forbidden":
        return Credential(None, (
            f"the agent at {url} runs as {who}; only that user (or root) may read its token: run this as that user "
            f"(sudo -u {_user_name(owner) or '#' + str(owner)} …) or with sudo, or {GIVE}"
        ))
    return Credential(None, f"arcus_client does not use {path}: {found.detail}; {GIVE}")
