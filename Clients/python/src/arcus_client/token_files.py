"""The copies of running agents' tokens that each agent keeps for the user who runs it, read the
way the arcus CLI reads them (Sources/ArcusAgent/Agent/UserTokenFiles.swift,
ListeningSocketOwners.swift), so that a script run as that user needs no token by hand."""

from __future__ import annotations

import errno
import ipaddress
import os
import pwd
import stat
from typing import Mapping, NamedTuple, Optional, Set, Union

TOKEN_HEX_DIGITS = 64


def parse_token(text: str) -> Optional[str]:
    """The token `text` spells (64 hex digits, either case, whitespace around them ignored, such as
    a file's last newline), as the header carries it: lowercase. None if it is not one."""
    text = text.strip()
    if len(text) != TOKEN_HEX_DIGITS or any(c not in "0123456789abcdefABCDEF" for c in text):
        return None
    return text.lower()


def _address(host: str) -> Optional[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """`localhost`, 127.0.0.0/8, ::1 or ::ffff:127.x.y.z: names only this machine answers."""
    host = host.lower()
    if host == "localhost":
        return True
    address = _address(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address is not None and address.is_loopback


def is_wildcard(host: str) -> bool:
    """0.0.0.0 or `::`: every address of this machine."""
    address = _address(host)
    return address is not None and address.is_unspecified


def file_name(host: str, port: int) -> Optional[str]:
    """The file an agent at `host:port` keeps its token in: `localhost:PORT` for loopback and
    wildcard addresses (every local client reaches them through it), else `HOST:PORT`."""
    host = host.lower()
    if not 1 <= port <= 65_535 or not host or "/" in host or host.startswith(".") or len(host) > 253:
        return None
    if is_loopback(host) or is_wildcard(host):
        return f"localhost:{port}"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def directory(user: int, environ: Mapping[str, str]) -> Optional[str]:
    """Where `user`'s agents keep their tokens: `$XDG_STATE_HOME/arcus/agents` for this process's
    own user when that is set, else `<the account's home>/.local/state/arcus/agents` (the account's,
    not $HOME, so that root finds the files of the user an agent runs as)."""
    mine = user == os.geteuid()
    state = environ.get("XDG_STATE_HOME", "")
    if mine and state.startswith("/"):
        return os.path.join(state, "arcus", "agents")
    home: Optional[str] = None
    try:
        home = pwd.getpwuid(user).pw_dir
    except KeyError:
        pass
    if not (home and home.startswith("/")):
        fallback = environ.get("HOME", "")
        home = fallback if mine and fallback.startswith("/") else None
    return os.path.join(home, ".local", "state", "arcus", "agents") if home else None


class Lookup(NamedTuple):
    """What reading a token file found: `found` (detail: the token), `absent`, `forbidden` (another
    user's file), or `unusable` (detail: why it is not to be trusted)."""

    kind: str
    detail: str = ""


def read(path: str, owner: int) -> Lookup:
    """The token in the file at `path`, which `owner` must own and no one else may read."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return Lookup("absent")
        if error.errno in (errno.EACCES, errno.EPERM):
            return Lookup("forbidden")
        return Lookup("unusable", os.strerror(error.errno or 0))
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return Lookup("unusable", "it is not a regular file")
        if status.st_uid != owner:
            return Lookup("unusable", f"it belongs to uid {status.st_uid}, not to uid {owner}")
        if status.st_mode & 0o077:
            return Lookup("unusable", f"others may read it (mode {status.st_mode & 0o777:o})")
        data = os.read(descriptor, 257)
    finally:
        os.close(descriptor)
    token = parse_token(data.decode("utf-8", "replace")) if 0 < len(data) <= 256 else None
    return Lookup("found", token) if token else Lookup("unusable", "it does not hold a token")


def listening_owners(port: int) -> Optional[Set[int]]:
    """The uids owning TCP sockets that listen on `port` (Linux's /proc/net/tcp and tcp6); empty
    when nothing listens there, None when the system does not say. The token a user's agent left is
    sent only to a listener of that user: another user may have taken a stopped agent's port."""
    owners: Set[int] = set()
    read_any = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii", errors="replace") as file:
                lines = file.read(64 << 20).splitlines()
        except OSError:
            continue
        read_any = True
        for line in lines[1:]:
            fields = line.split()
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid …; 0A is LISTEN.
            if len(fields) > 7 and fields[3] == "0A" and ":" in fields[1]:
                try:
                    if int(fields[1].rsplit(":", 1)[1], 16) == port:
                        owners.add(int(fields[7]))
                except ValueError:
                    continue
    return owners if read_any else None
