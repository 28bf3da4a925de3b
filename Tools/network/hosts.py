"""Hosts on a bridge: each a network namespace (and a private mount namespace) with its own
D-Bus system bus, avahi-daemon and `arcus agent` process, all on a Linux bridge that lives in a
namespace of its own. Nothing here touches the machine's own interfaces: the bridge has no
uplink, the addresses are private ones inside the namespaces, and every avahi-daemon is
confined to its host's eth0 (which only reaches the bridge).
"""

import ctypes
import email.utils
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

BRIDGE_NS = "arcus-net-br"
SUBNET = "10.77.0"
LAN_PORT = 7000
HTTP_PORT = 4747
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def run(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def enter_network_namespace(name):
    """Moves the calling thread (only it: namespaces are per task on Linux) into a network
    namespace, so that its sockets reach that host's 127.0.0.1."""
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


# Tools/avahi-test.conf.in, with this host's eth0 and a host name of its own: with the machine's
# name on every host the daemons would spend the run resolving the conflict (vm-2.local,
# vm-3.local, ...), and publish nothing meanwhile.
AVAHI_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "avahi-test.conf.in")


def avahi_conf(host_name):
    with open(AVAHI_TEMPLATE) as f:
        text = f.read()
    return text.replace("@HOST_NAME@", f"host-name={host_name}").replace("@INTERFACE@", "eth0")

# Runs inside `ip netns exec HOST unshare -m`: gives the host its own /run/dbus and
# /run/avahi-daemon (their pid files and sockets are at fixed paths), starts the bus and the
# daemon there, then holds the namespaces open for the agent processes `nsenter` starts.
HOST_INIT = r"""set -e
dir="$1"
mount --make-rprivate /
mkdir -p "$dir/run-dbus" "$dir/run-avahi"
mount --bind "$dir/run-dbus" /run/dbus
mount --bind "$dir/run-avahi" /run/avahi-daemon
ip link set lo up
if [ "$2" = mdns ]; then
    dbus-daemon --system --fork --print-pid > "$dir/dbus.pid"
    avahi-daemon --daemonize --no-chroot --file="$dir/avahi.conf"
fi
echo ready
exec sleep infinity
"""


# The `clock` fault: Tools/network/wallclock.c, preloaded into every agent, adds the offset in the
# host's file to the agent's CLOCK_REALTIME readings (and only the agent's; the machine's clock is
# never touched). Built into the run's directory with the C compiler at hand.
WALLCLOCK_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wallclock.c")


def c_compiler():
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def build_wallclock(scratch):
    """The shared library of the clock fault, or None without a C compiler."""
    compiler = c_compiler()
    if compiler is None:
        return None
    target = os.path.join(scratch, "wallclock.so")
    run(compiler, "-shared", "-fPIC", "-O2", "-o", target, WALLCLOCK_SOURCE, "-ldl")
    return target


class Agent:
    """One `arcus agent` process of a host; restarted with the same data directory."""

    def __init__(self, host):
        self.host = host
        self.process = None
        self.starts = 0

    def start(self):
        h = self.host
        self.starts += 1
        log = open(os.path.join(h.dir, "agent.log"), "a")
        log.write(f"\n=== start {self.starts} at {time.time():.3f}\n")
        log.flush()
        argv = ["nsenter", "-t", str(h.holder.pid), "-m", "-n", "--"]
        if h.bed.wallclock:
            # Preloaded into the agent only (env execs it), not into nsenter.
            argv += ["env", f"LD_PRELOAD={h.bed.wallclock}", f"ARCUS_WALLCLOCK_FILE={h.clock_file}"]
        argv += [h.bed.arcus, "agent", "--data", h.data, "--name", h.name,
                "--config", h.bed.agent_config, "--transports", "lan",
                "--listen", f"{h.address}:{LAN_PORT}", "--http", f"127.0.0.1:{HTTP_PORT}",
                "--subscribe", "SELECT * FROM docs", "--subscribe", "SELECT * FROM counters",
                "--log-level", "info"]
        if h.bed.discovery == "static":
            for other in h.bed.hosts:
                if other is not h:
                    argv += ["--peer", f"{other.address}:{LAN_PORT}"]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        log.close()

    def kill(self):
        """SIGKILL: no clean stop, as when the process is killed or crashes."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def running(self):
        return self.process is not None and self.process.poll() is None


class Host:
    def __init__(self, bed, index):
        self.bed = bed
        self.index = index
        self.name = f"h{index}"
        self.netns = f"arcus-net-{self.name}"
        self.address = f"{SUBNET}.{index + 1}"
        self.port = f"v{index}"  # its veth's end on the bridge
        self.dir = os.path.join(bed.scratch, self.name)
        self.data = os.path.join(self.dir, "data")
        self.clock_file = os.path.join(self.dir, "wallclock")
        self.clock_offset = 0
        self.holder = None
        self.agent = Agent(self)
        self._token = None

    def create(self):
        os.makedirs(self.dir, exist_ok=True)
        self.set_clock(0)
        with open(os.path.join(self.dir, "avahi.conf"), "w") as f:
            f.write(avahi_conf(f"arcus-{self.name}"))
        run("ip", "netns", "add", self.netns)
        run("ip", "-n", BRIDGE_NS, "link", "add", self.port, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        run("ip", "-n", BRIDGE_NS, "link", "set", self.port, "master", "br0")
        run("ip", "-n", BRIDGE_NS, "link", "set", self.port, "up")
        run("ip", "-n", self.netns, "addr", "add", f"{self.address}/24", "dev", "eth0")
        run("ip", "-n", self.netns, "link", "set", "eth0", "up")
        os.makedirs("/run/dbus", exist_ok=True)
        os.makedirs("/run/avahi-daemon", exist_ok=True)
        self.holder = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "unshare", "-m", "--", "sh", "-c", HOST_INIT, "host-init",
             self.dir, self.bed.discovery],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "host.log"), "w"), text=True)
        line = self.holder.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"host {self.name} did not start (see {self.dir}/host.log)")
        # The holder is `sh` exec'd into sleep: nsenter's target must be that process, which is
        # in the namespaces; `ip netns exec` execs into unshare, which execs into sh.

    def destroy(self):
        self.agent.stop()
        for pidfile in ("run-avahi/pid", "dbus.pid"):
            path = os.path.join(self.dir, pidfile)
            try:
                os.kill(int(open(path).read().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        if self.holder and self.holder.poll() is None:
            self.holder.kill()
            self.holder.wait()
        run("ip", "netns", "del", self.netns, check=False)

    def set_clock(self, offset):
        """Steps this host's agent's wall clock to the real one plus offset seconds (it reads the
        file at most 100 ms later); replaced whole, so that it never reads half a write."""
        with open(self.clock_file + ".new", "w") as f:
            f.write(f"{offset:+d}\n")
        os.replace(self.clock_file + ".new", self.clock_file)
        self.clock_offset = offset

    def agent_clock_offset(self):
        """The agent's wall clock less the machine's, in seconds, from the Date header of its HTTP
        API (whole seconds, refreshed every second; in its namespace)."""
        req = urllib.request.Request(f"http://127.0.0.1:{HTTP_PORT}/v1/status")
        req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, timeout=3) as resp:
            date = email.utils.parsedate_to_datetime(resp.headers["Date"]).timestamp()
        return date - time.time()

    def wait_clock(self, offset, timeout=10):
        """Until the agent's clock reads offset seconds from the machine's (within 3 s)."""
        deadline = time.time() + timeout
        while True:
            try:
                seen = in_namespace(self, self.agent_clock_offset)
            except (OSError, urllib.error.URLError):
                seen = None
            if seen is not None and abs(seen - offset) < 3:
                return seen
            if time.time() > deadline:
                raise RuntimeError(f"{self.name}'s agent reads its clock {seen} s from the machine's, not {offset:+d} s")
            time.sleep(0.3)

    @property
    def token(self):
        if self._token is None:
            self._token = open(os.path.join(self.data, "api-token")).read().strip()
        return self._token

    def tx_bytes(self):
        out = run("ip", "netns", "exec", self.netns, "cat", "/sys/class/net/eth0/statistics/tx_bytes").stdout
        return int(out.strip())


class HostClient:
    """HTTP to one host's agent, from a thread that entered the host's network namespace."""

    def __init__(self, host, timeout=5.0):
        self.host = host
        self.timeout = timeout

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{HTTP_PORT}{path}", data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.host.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.loads(resp.read() or b"null")

    def execute(self, statement, args=None):
        body = {"statement": statement}
        if args:
            body["args"] = args
        return self.request("POST", "/v1/execute", body)


def in_namespace(host, fn, *args):
    """Runs fn(*args) on a fresh thread inside host's network namespace and returns its result."""
    result = {}

    def body():
        try:
            enter_network_namespace(host.netns)
            result["value"] = fn(*args)
        except BaseException as e:  # handed to the caller
            result["error"] = e
    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


class TestBed:
    def __init__(self, count, scratch, arcus, discovery):
        self.scratch = scratch
        self.arcus = arcus
        self.discovery = discovery
        self.hosts = [Host(self, i) for i in range(count)]
        self.agent_config = os.path.join(scratch, "agent.json")
        self.wallclock = None  # the clock fault's preload (build_wallclock), made by create()

    def create(self):
        self.destroy_leftovers()
        run("ip", "netns", "add", BRIDGE_NS)
        run("ip", "-n", BRIDGE_NS, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", BRIDGE_NS, "link", "set", "br0", "up")
        secret = os.path.join(self.scratch, "mesh.secret")
        run(self.arcus, "mesh", "secret", secret)
        with open(self.agent_config, "w") as f:
            json.dump({"mesh_secret_file": secret}, f)
        self.wallclock = build_wallclock(self.scratch)
        for h in self.hosts:
            h.create()

    def destroy(self):
        for h in self.hosts:
            h.destroy()
        run("ip", "netns", "del", BRIDGE_NS, check=False)

    @staticmethod
    def destroy_leftovers():
        """A run killed before its cleanup leaves namespaces named like ours: remove them."""
        names = run("ip", "netns", "list").stdout.split("\n")
        for line in names:
            name = line.split(" ")[0]
            if name.startswith("arcus-net-"):
                for pid in run("ip", "netns", "pids", name, check=False).stdout.split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except OSError:
                        pass
                run("ip", "netns", "del", name, check=False)

    def start_agents(self, timeout=60):
        for h in self.hosts:
            h.agent.start()
        deadline = time.time() + timeout
        for h in self.hosts:
            self.wait_ready(h, deadline)

    def wait_ready(self, host, deadline):
        while True:
            if not host.agent.running:
                raise RuntimeError(f"agent {host.name} exited (log: {host.dir}/agent.log)")
            try:
                in_namespace(host, lambda: HostClient(host, timeout=2).request("GET", "/v1/status"))
                return
            except (OSError, urllib.error.URLError, FileNotFoundError):
                if time.time() > deadline:
                    raise RuntimeError(f"agent {host.name} did not answer (log: {host.dir}/agent.log)")
                time.sleep(0.2)

    def isolation_report(self):
        """What the test's namespaces hold: the bridge only its ports, each host only lo and eth0."""
        problems = []
        links = run("ip", "-n", BRIDGE_NS, "-o", "link", "show").stdout
        names = sorted(l.split(":")[1].strip().split("@")[0] for l in links.strip().split("\n"))
        expected = sorted(["lo", "br0"] + [h.port for h in self.hosts])
        if names != expected:
            problems.append(f"bridge namespace has links {names}, expected {expected}")
        for h in self.hosts:
            links = run("ip", "-n", h.netns, "-o", "link", "show").stdout
            names = sorted(l.split(":")[1].strip().split("@")[0] for l in links.strip().split("\n"))
            if names != ["eth0", "lo"]:
                problems.append(f"{h.name} has links {names}")
        host_links = run("ip", "-o", "link", "show").stdout
        for h in self.hosts:
            if f" {h.port}@" in host_links or f" {h.port}:" in host_links:
                problems.append(f"{h.port} is on the machine's own namespace")
        return problems


def copy_binary(arcus, scratch):
    """The agents run a copy, so that a rebuild during the run does not change them."""
    target = os.path.join(scratch, "arcus")
    shutil.copy2(arcus, target)
    return target
