"""Real `arcus agent` processes for the tests: each in a temporary directory of its own, its API
on 127.0.0.1 (a port the system picks), its token copy under a private XDG_STATE_HOME, and
stopped with SIGTERM (then waited for) when the test is done. Linux's parent-death signal stops
an agent even if the test process dies first, so that none is left behind."""

from __future__ import annotations

import ctypes
import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, List, Optional, Tuple, TypeVar

T = TypeVar("T")
REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ARCUS = os.environ.get("ARCUS_BIN") or os.path.join(REPOSITORY, ".build", "debug", "arcus")


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def arcus_binary(wait: float = 60.0) -> str:
    """The binary; another build may be replacing it, so a missing one is waited for a while."""
    deadline = time.monotonic() + wait
    while not os.access(ARCUS, os.X_OK):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no arcus binary at {ARCUS}: build it (swift build) or set ARCUS_BIN")
        time.sleep(1)
    return ARCUS


@dataclass
class Agent:
    process: subprocess.Popen[bytes]
    directory: str
    ready: Dict[str, Any]
    state_home: str
    log_path: str
    stopped: bool = field(default=False)

    @property
    def url(self) -> str:
        return str(self.ready["http"])

    @property
    def peer(self) -> str:
        return str(self.ready["peer"])

    @property
    def name(self) -> str:
        return str(self.ready["name"])

    @property
    def token_file(self) -> str:
        return os.path.join(self.directory, "data", "api-token")

    @property
    def token(self) -> str:
        with open(self.token_file) as file:
            return file.read().strip()

    @property
    def environ(self) -> Dict[str, str]:
        """An environment in which the agent's own token copy is found (and no ARCUS_TOKEN)."""
        environ = {k: v for k, v in os.environ.items() if k != "ARCUS_TOKEN"}
        environ["XDG_STATE_HOME"] = self.state_home
        return environ

    def log(self) -> str:
        with open(self.log_path, errors="replace") as file:
            return file.read()

    def stop(self) -> Optional[int]:
        """SIGTERM, then wait (SIGKILL after 20 s): the agent stops its parts in order and exits 0."""
        if self.stopped:
            return self.process.returncode
        self.stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        return self.process.returncode


def start(root: str, name: str, *, args: Optional[List[str]] = None, config: Optional[Dict[str, Any]] = None) -> Agent:
    """Starts `arcus agent` in ROOT/NAME and waits for its ready line."""
    directory = os.path.join(root, name)
    state_home = os.path.join(directory, "state")
    os.makedirs(state_home, mode=0o700)
    command = [arcus_binary(), "agent", "--data", os.path.join(directory, "data"), "--name", name, "--http", "127.0.0.1:0"]
    if config is not None:
        config_path = os.path.join(directory, "agent.json")
        with open(config_path, "w") as file:
            json.dump(config, file)
        command += ["--config", config_path]
    command += args or []
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ARCUS_")}
    environ["XDG_STATE_HOME"] = state_home
    log_path = os.path.join(directory, "agent.log")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=environ, cwd=directory,
            preexec_fn=_die_with_parent)
    agent = Agent(process, directory, {}, state_home, log_path)
    try:
        agent.ready = _ready_line(process, 30.0)
    except BaseException as error:
        agent.stop()
        raise RuntimeError(f"arcus agent {name} did not start ({error or type(error).__name__}):\n{agent.log()[-3000:]}") from None
    return agent


def _ready_line(process: subprocess.Popen[bytes], timeout: float) -> Dict[str, Any]:
    deadline = time.monotonic() + timeout
    stdout: IO[bytes] = process.stdout  # type: ignore[assignment]
    selector = selectors.DefaultSelector()
    selector.register(stdout, selectors.EVENT_READ)
    line = b""
    try:
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise TimeoutError("no ready line")
            piece = os.read(stdout.fileno(), 4096)
            if not piece:
                raise EOFError(f"exited with status {process.wait()}")
            line += piece
    finally:
        selector.close()
    ready: Dict[str, Any] = json.loads(line)
    assert ready.get("agent") == "ready", ready
    return ready


def mesh_secret(root: str) -> Dict[str, Any]:
    """A fresh shared secret (arcus mesh secret), as the configuration that names it."""
    path = os.path.join(root, "mesh.secret")
    subprocess.run([arcus_binary(), "mesh", "secret", path], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return {"mesh_secret_file": path}


def lan_pair(root: str, *, subscribe: str = "SELECT * FROM cars") -> Tuple[Agent, Agent]:
    """Agents `source` and `follower` linked over LAN TCP on 127.0.0.1 (no mDNS, a shared secret);
    the follower dials the source and subscribes to `subscribe`."""
    config = mesh_secret(root)
    lan = ["--transports", "lan", "--listen", "127.0.0.1:0", "--no-mdns"]
    source = start(root, "source", args=lan, config=config)
    try:
        follower = start(root, "follower", args=lan + ["--peer", source.ready["lan"], "--subscribe", subscribe], config=config)
    except BaseException:
        source.stop()
        raise
    return source, follower


def eventually(check: Callable[[], Optional[T]], timeout: float = 15.0, interval: float = 0.05, what: str = "the condition") -> T:
    """The first truthy result of `check`, asked until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout} s")
        time.sleep(interval)


def temporary_root(prefix: str) -> "tempfile.TemporaryDirectory[str]":
    # Short, in /tmp: agents' sockets and paths stay well within limits.
    return tempfile.TemporaryDirectory(prefix=prefix, dir="/tmp")
