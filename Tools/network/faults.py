"""Faults on a seeded schedule, applied to the bridge and the hosts.

The host kernel here has no netem, so loss and duplication are nftables rules on the bridge
(`numgen random`, `dup to`), partitions are drop rules or a port taken down, and the BLE-like
rate limit is a token bucket (tbf) on both ends of a host's veth. Delay, jitter and reordering
need netem: `available()` says what this kernel can do, and the schedule uses only that (Debian's
stock kernel has netem: `Tools/test-network.sh --vm` runs the bed in it).
"""

import random
import subprocess

from hosts import BRIDGE_NS, run

# Not the network's: one host's agent has its wall clock stepped (Tools/network/wallclock.c; the
# bed has the kind when it could build that), forward by minutes to hours or back, then cleared.
CLOCK_STEPS = (300, 1800, 3600, 7200, -60, -600, -3600)

KINDS = ("partition", "one-way", "isolate", "loss", "duplicate", "rate-limit", "kill", "delay", "jitter", "reorder")
NETEM = ("delay", "jitter", "reorder")
TBF = ("rate", "100kbit", "burst", "4kb", "latency", "500ms")


def available():
    """The fault kinds this kernel supports (netem for delay, jitter and reordering)."""
    kinds = [k for k in KINDS if k not in NETEM]
    probe = subprocess.run(["ip", "netns", "exec", BRIDGE_NS, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode == 0:
        run("ip", "netns", "exec", BRIDGE_NS, "tc", "qdisc", "del", "dev", "lo", "root", check=False)
        kinds += NETEM
    return kinds


def netem_args(f):
    """The netem options of a delay, jitter or reorder fault (on every bridge port: each frame once)."""
    if f.kind == "delay":
        return ["delay", f"{f.params['ms']}ms"]
    if f.kind == "jitter":
        return ["delay", f"{f.params['ms']}ms", f"{f.params['jitter_ms']}ms", "distribution", "normal"]
    # The given share of frames goes at once, the others wait: later frames overtake them.
    return ["delay", f"{f.params['ms']}ms", "reorder", f"{f.params['percent']}%", "50%"]


class Fault:
    def __init__(self, kind, start, duration, **params):
        self.kind = kind
        self.start = start
        self.duration = duration
        self.params = params

    def describe(self):
        p = " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"t={self.start:5.1f}s {self.kind:<10} {self.duration:4.1f}s {p}"

    def to_json(self):
        return {"kind": self.kind, "start": round(self.start, 2), "duration": round(self.duration, 2), **self.params}


def schedule(rng: random.Random, hosts: int, seconds: float, kinds):
    """Lanes, each one fault at a time: the network's (every 1.5–4 s, lasting 1.5–6 s), the
    agents' (a SIGKILL every 3–8 s, restarted 1–5 s later), so kills land in partitions, and the
    clock's (below). Sorted by start."""
    network = [k for k in kinds if k not in ("kill", "clock")]
    faults = []
    t = rng.uniform(1.0, 2.5)
    while network and t < seconds:
        kind = rng.choice(network)
        duration = min(rng.uniform(1.5, 6.0), max(0.5, seconds - t))
        if kind == "partition":
            side = rng.sample(range(hosts), rng.randint(1, max(1, hosts // 2)))
            f = Fault(kind, t, duration, side=sorted(side))
        elif kind == "one-way":
            a, b = rng.sample(range(hosts), 2)
            f = Fault(kind, t, duration, src=a, dst=b)
        elif kind in ("isolate", "rate-limit"):
            f = Fault(kind, t, duration, host=rng.randrange(hosts))
        elif kind == "loss":
            f = Fault(kind, t, duration, percent=rng.choice([10, 30]))
        elif kind == "duplicate":
            f = Fault(kind, t, duration, percent=rng.choice([5, 20]))
        elif kind == "delay":
            f = Fault(kind, t, duration, ms=rng.choice([50, 200]))
        elif kind == "jitter":
            f = Fault(kind, t, duration, ms=rng.choice([50, 200]), jitter_ms=200)
        elif kind == "reorder":
            f = Fault(kind, t, duration, ms=50, percent=rng.choice([25, 50]))
        faults.append(f)
        t += duration + rng.uniform(0.5, 2.0)
    t = rng.uniform(2.0, 5.0)
    while "kill" in kinds and t < seconds:
        duration = min(rng.uniform(1.0, 5.0), max(0.5, seconds - t))
        faults.append(Fault("kill", t, duration, host=rng.randrange(hosts)))
        t += duration + rng.uniform(2.0, 5.0)
    # The clock's lane: one host's clock stepped at a time, every 1-3 s, for 3-8 s; half the steps
    # around a kill of that host, so that its agent restarts under the step, or has it cleared (a
    # step back from a forward one) while down: a clock that a restart lowers shows there.
    kills = [f for f in faults if f.kind == "kill"]
    t = rng.uniform(1.0, 4.0)
    while "clock" in kinds and t < seconds:
        offset = rng.choice(CLOCK_STEPS)
        kill = next((k for k in kills if k.start > t + 0.5), None)
        if kill is not None and rng.random() < 0.5:
            host = kill.params["host"]
            start = max(t, kill.start - rng.uniform(0.5, 2.0))
            end = kill.start + rng.uniform(0.3, kill.duration + 3.0)
        else:
            host = rng.randrange(hosts)
            start, end = t, t + rng.uniform(3.0, 8.0)
        duration = min(end - start, max(0.5, seconds - start))
        faults.append(Fault("clock", start, duration, host=host, offset=offset))
        t = start + duration + rng.uniform(1.0, 3.0)
    return sorted(faults, key=lambda f: f.start)


def clock_restarts(clock, faults):
    """How a clock fault meets its host's kills: "restart under it" (the agent starts again while
    the clock is stepped), "cleared while down" (the step ends while the agent is killed, so it
    starts on the real clock again)."""
    met = []
    for k in faults:
        if k.kind != "kill" or k.params["host"] != clock.params["host"]:
            continue
        restart, end = k.start + k.duration, clock.start + clock.duration
        if clock.start <= restart < end:
            met.append("restart under it")
        elif k.start < end <= restart:
            met.append("cleared while down")
    return met


def one_of_each(hosts: int, kinds):
    """A fault of every kind, for the check that each applies and clears before the run."""
    samples = {"partition": dict(side=[0]), "one-way": dict(src=0, dst=1), "isolate": dict(host=0),
               "loss": dict(percent=10), "duplicate": dict(percent=5), "rate-limit": dict(host=0),
               "kill": dict(host=hosts - 1), "delay": dict(ms=50), "jitter": dict(ms=50, jitter_ms=200),
               "reorder": dict(ms=50, percent=25)}
    samples["clock"] = dict(host=0, offset=-600)
    return [Fault(kind, 0, 0.2, **samples[kind]) for kind in kinds]


def timeline(faults):
    """(time, "apply" | "clear", fault), in order; a fault is cleared before one starting then."""
    events = [(f.start, 1, "apply", f) for f in faults] + [(f.start + f.duration, 0, "clear", f) for f in faults]
    return [(t, action, f) for t, _, action, f in sorted(events, key=lambda e: (e[0], e[1]))]


def _nft(ruleset):
    done = subprocess.run(["ip", "netns", "exec", BRIDGE_NS, "nft", "-f", "-"], input=ruleset, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise RuntimeError(f"nft refused the rules: {done.stderr.strip()}\n{ruleset}")


class Injector:
    def __init__(self, bed):
        self.bed = bed
        self.netem = None  # the background netem on every host's eth0 (background_netem), kept through the heal
        _nft("table bridge faults {\n chain forward { type filter hook forward priority 0; policy accept; }\n}\n")

    def background_loss(self, percent):
        """Loss on every frame crossing the bridge for the whole run, the heal included (a network
        that stays bad); apart from the faults' rules, which come and go."""
        _nft("table bridge background {\n chain forward { type filter hook forward priority 1; policy accept;\n"
             f"  numgen random mod 100 < {percent} drop\n }}\n}}\n")

    def background_netem(self, delay_ms, jitter_ms):
        """Every frame a host sends waits delay ± jitter (uniform; frames overtake each other) on
        its eth0, for the whole run, the heal included: each frame once, whichever way it goes."""
        self.netem = ["delay", f"{delay_ms}ms"] + ([f"{jitter_ms}ms"] if jitter_ms else [])
        for h in self.bed.hosts:
            self._host_qdisc(h, rate_limited=False)

    def _host_qdisc(self, h, rate_limited):
        """A host's eth0: the background netem if any, the rate limit's tbf (under the netem if both)."""
        tc = ("ip", "netns", "exec", h.netns, "tc", "qdisc")
        run(*tc, "del", "dev", "eth0", "root", check=False)
        parent = ("root",)
        if self.netem:
            run(*tc, "add", "dev", "eth0", "root", "handle", "1:", "netem", *self.netem)
            parent = ("parent", "1:1")
        if rate_limited:
            run(*tc, "add", "dev", "eth0", *parent, "tbf", *TBF)

    def _forward_rules(self, rules):
        _nft("flush chain bridge faults forward\n" + "".join(f"add rule bridge faults forward {r}\n" for r in rules))

    def apply(self, f):
        hosts = self.bed.hosts
        if f.kind == "partition":
            a = {hosts[i].address for i in f.params["side"]}
            b = {h.address for h in hosts} - a
            sa, sb = "{ " + ", ".join(sorted(a)) + " }", "{ " + ", ".join(sorted(b)) + " }"
            self._forward_rules([f"ip saddr {sa} ip daddr {sb} drop", f"ip saddr {sb} ip daddr {sa} drop"])
        elif f.kind == "one-way":
            self._forward_rules([f"ip saddr {hosts[f.params['src']].address} ip daddr {hosts[f.params['dst']].address} drop"])
        elif f.kind == "isolate":
            run("ip", "-n", BRIDGE_NS, "link", "set", hosts[f.params["host"]].port, "down")
        elif f.kind == "loss":
            self._forward_rules([f"numgen random mod 100 < {f.params['percent']} drop"])
        elif f.kind == "duplicate":
            # A copy sent straight out of the destination's port, besides the bridged original.
            ruleset = ""
            for h in hosts:
                ruleset += f"table netdev dup_{h.port} {{\n chain c {{\n  type filter hook ingress device {h.port} priority 0;\n"
                for other in hosts:
                    if other is not h:
                        ruleset += (f"  ip daddr {other.address} numgen random mod 100 < {f.params['percent']}"
                                    f" dup to {other.port}\n")
                ruleset += " }\n}\n"
            _nft(ruleset)
        elif f.kind == "rate-limit":
            h = hosts[f.params["host"]]
            run("ip", "netns", "exec", BRIDGE_NS, "tc", "qdisc", "replace", "dev", h.port, "root", "tbf", *TBF)
            self._host_qdisc(h, rate_limited=True)
        elif f.kind == "clock":
            hosts[f.params["host"]].set_clock(f.params["offset"])
        elif f.kind == "kill":
            hosts[f.params["host"]].agent.kill()
        elif f.kind in NETEM:
            for h in hosts:
                run("ip", "netns", "exec", BRIDGE_NS, "tc", "qdisc", "replace", "dev", h.port, "root", "netem", *netem_args(f))

    def clear(self, f):
        hosts = self.bed.hosts
        if f.kind in ("partition", "one-way", "loss"):
            self._forward_rules([])
        elif f.kind == "isolate":
            run("ip", "-n", BRIDGE_NS, "link", "set", hosts[f.params["host"]].port, "up")
        elif f.kind == "duplicate":
            for h in hosts:
                _nft(f"delete table netdev dup_{h.port}\n")
        elif f.kind == "rate-limit":
            h = hosts[f.params["host"]]
            run("ip", "netns", "exec", BRIDGE_NS, "tc", "qdisc", "del", "dev", h.port, "root", check=False)
            self._host_qdisc(h, rate_limited=False)
        elif f.kind == "clock":
            hosts[f.params["host"]].set_clock(0)
        elif f.kind == "kill":
            hosts[f.params["host"]].agent.start()
        elif f.kind in NETEM:
            for h in hosts:
                run("ip", "netns", "exec", BRIDGE_NS, "tc", "qdisc", "del", "dev", h.port, "root", check=False)

    def heal(self):
        """Everything back: no rules, every port up, no qdisc but the background netem, every agent running."""
        self._forward_rules([])
        for h in self.bed.hosts:
            run("ip", "-n", BRIDGE_NS, "link", "set", h.port, "up")
            _nft_quiet(f"delete table netdev dup_{h.port}\n")
            run("ip", "netns", "exec", BRIDGE_NS, "tc", "qdisc", "del", "dev", h.port, "root", check=False)
            self._host_qdisc(h, rate_limited=False)
            h.set_clock(0)
            if not h.agent.running:
                h.agent.start()


def _nft_quiet(ruleset):
    subprocess.run(["ip", "netns", "exec", BRIDGE_NS, "nft", "-f", "-"], input=ruleset, text=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
