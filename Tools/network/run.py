"""One run of the network test bed: N hosts, a seeded schedule of faults while every host writes,
a heal, convergence, and the checker. Prints each check as `ok`/`FAIL`, the figures as one JSON
line, and last `N passed, M failed`. Run it through Tools/test-network.sh (needs root)."""

import argparse
import fcntl
import json
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checker import RULES, check  # noqa: E402
from faults import Injector, available, clock_restarts, one_of_each, schedule, timeline  # noqa: E402
from hosts import HostClient, TestBed, copy_binary, in_namespace  # noqa: E402
from workload import COUNTERS, History, Writer, create_counters, read_state  # noqa: E402


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def wait_until(what, predicate, timeout, interval=0.5):
    """Seconds it took for predicate() to hold, or None after timeout."""
    start = time.time()
    while True:
        try:
            if predicate():
                return time.time() - start
        except Exception:  # an agent restarting does not answer yet
            pass
        if time.time() - start > timeout:
            log(f"{what}: not within {timeout} s")
            return None
        time.sleep(interval)


def neighbours(host):
    peers = in_namespace(host, lambda: HostClient(host, timeout=3).request("GET", "/v1/peers"))
    return sum(1 for p in peers.get("peers", []) if p.get("hops") == 1)


def read_all(bed):
    return {h.index: in_namespace(h, read_state, h) for h in bed.hosts}


def converged(states):
    first = states[0]
    return all(s["docs"] == first["docs"] and s["counters"] == first["counters"] for s in states.values())


def milliseconds(text):
    return int(text[:-2] if text.endswith("ms") else text)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--seconds", type=float, default=30, help="how long the faults and writes last")
    p.add_argument("--seed", type=int, default=None, help="replays a run's faults and operations")
    p.add_argument("--arcus", default=".build/debug/arcus")
    p.add_argument("--discovery", choices=["mdns", "static"], default="mdns")
    p.add_argument("--loss", type=int, default=0, help="percent of frames dropped all through the run, heal included")
    p.add_argument("--jitter", type=milliseconds, default=0,
                   help="MS[ms]: all through the run, heal included, each frame waits delay ± jitter (netem, uniform)")
    p.add_argument("--delay", type=milliseconds, default=None, help="MS[ms]: that delay (default the jitter's size)")
    p.add_argument("--converge-timeout", type=float, default=180)
    p.add_argument("--keep", action="store_true", help="keep the run's directory even when it passes")
    args = p.parse_args()
    if not 2 <= args.hosts <= 64:
        p.error("--hosts is 2 to 64")
    if args.delay is None:
        args.delay = args.jitter
    # The namespaces have fixed names: a second run at once would tear down the first one's.
    lock = open("/run/arcus-network.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("error: another Tools/test-network.sh run is in progress (it holds /run/arcus-network.lock)", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    scratch = tempfile.mkdtemp(prefix="arcus-network.")
    results = []  # (name, ok, detail)

    def result(name, ok, detail=""):
        results.append((name, ok, detail))
        print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)

    replay = (f"Tools/test-network.sh{' --vm' if os.environ.get('ARCUS_NETWORK_VM') else ''} --hosts {args.hosts} "
              f"--seconds {args.seconds:g} --seed {seed}" + (f" --loss {args.loss}" if args.loss else "")
              + (f" --delay {args.delay}ms --jitter {args.jitter}ms" if args.delay or args.jitter else ""))
    log(f"seed {seed} (replay: {replay}); "
        f"run directory {scratch}")
    bed = TestBed(args.hosts, scratch, copy_binary(args.arcus, scratch), args.discovery)
    figures = {"hosts": args.hosts, "seconds": args.seconds, "seed": seed, "discovery": args.discovery, "loss_percent": args.loss,
               "delay_ms": args.delay, "jitter_ms": args.jitter}
    try:
        bed.create()
        kinds = available() + (["clock"] if bed.wallclock else [])
        log(f"{args.hosts} hosts on a bridge ({', '.join(h.address for h in bed.hosts)}), fault kinds: {', '.join(kinds)}")
        if (args.delay or args.jitter) and "delay" not in kinds:
            raise RuntimeError("--delay and --jitter need netem, which this kernel lacks: Tools/test-network.sh --vm runs the bed in Debian's")
        problems = bed.isolation_report()
        result("isolation: the bridge holds only the hosts' ports, each host only lo and eth0", not problems, "; ".join(problems))

        bed.start_agents()
        found = wait_until("discovery", lambda: all(neighbours(h) >= args.hosts - 1 for h in bed.hosts), 90)
        result(f"discovery ({args.discovery}): every host links to the {args.hosts - 1} others", found is not None,
               f"{found:.1f} s" if found is not None else "")
        figures["discovery_s"] = round(found, 2) if found is not None else None

        injector = Injector(bed)
        tried = []
        for f in one_of_each(args.hosts, kinds):
            injector.apply(f)
            if f.kind == "clock":  # the agent's own clock moves, and comes back
                bed.hosts[f.params["host"]].wait_clock(f.params["offset"])
            time.sleep(f.duration)
            injector.clear(f)
            if f.kind == "clock":
                bed.hosts[f.params["host"]].wait_clock(0)
            tried.append(f.kind)
        injector.heal()
        for h in bed.hosts:
            bed.wait_ready(h, time.time() + 60)
        result("faults: each kind applies and clears", True, ", ".join(tried))

        in_namespace(bed.hosts[0], create_counters, bed.hosts[0])
        wait_until("counters", lambda: all(len(s["counters"]) == len(COUNTERS) for s in read_all(bed).values()), 60)

        if args.loss:
            injector.background_loss(args.loss)
            log(f"{args.loss}% of frames dropped from now on, the heal included")
        if args.delay or args.jitter:
            injector.background_netem(args.delay, args.jitter)
            log(f"every frame waits {args.delay} ± {args.jitter} ms from now on (netem on each host's eth0), the heal included")
        rng = random.Random(seed)
        faults = schedule(rng, args.hosts, args.seconds, kinds)
        history = History()
        bytes_before = {h.index: h.tx_bytes() for h in bed.hosts}
        start = time.time()
        writers = [Writer(h, history, rng.randrange(1 << 31), start + args.seconds) for h in bed.hosts]
        for w in writers:
            w.start()
        for at, action, f in timeline(faults):
            time.sleep(max(0, start + at - time.time()))
            if action == "apply":
                log(f"fault {f.describe()}")
                injector.apply(f)
            else:
                injector.clear(f)
        time.sleep(max(0, start + args.seconds - time.time()))
        for w in writers:
            w.join()
        errors = [f"{w.name}: {w.error!r}" for w in writers if w.error]
        result("every writer ran to the end", not errors, "; ".join(errors))

        log("heal: every fault removed, every agent running")
        injector.heal()
        healed = time.time()
        deadline = healed + 60
        for h in bed.hosts:
            bed.wait_ready(h, deadline)
        final = {}

        def settled():
            final.clear()
            final.update(read_all(bed))
            return converged(final)
        took = wait_until("convergence", settled, args.converge_timeout, interval=0.5)
        figures["convergence_s"] = round(took, 2) if took is not None else None
        if not final:
            final.update(read_all(bed))
        violations, stats = check(history.events, final)
        bytes_sent = sum(h.tx_bytes() - bytes_before[h.index] for h in bed.hosts)
        figures.update(stats)
        figures["faults"] = len(faults)
        figures["fault_kinds"] = sorted({f.kind for f in faults})
        figures["clock_steps"] = [{"host": f.params["host"], "offset_s": f.params["offset"], "restarts": clock_restarts(f, faults)}
                                  for f in faults if f.kind == "clock"]
        if figures["clock_steps"]:
            log("clock steps: " + "; ".join(f"h{c['host']} {c['offset_s']:+d} s" + (f" ({', '.join(c['restarts'])})" if c["restarts"] else "")
                                            for c in figures["clock_steps"]))
        figures["bytes_per_host_per_ack"] = round(bytes_sent / args.hosts / max(1, stats["writes_acknowledged"]), 1)

        result(f"converged after the heal within {args.converge_timeout:g} s", took is not None,
               f"{took:.1f} s" if took is not None else "")
        for rule in RULES:
            found_here = [m for r, m in violations if r == rule]
            result(f"checker: {rule}", not found_here, f"{len(found_here)}: " + "; ".join(found_here[:5]) if found_here else "")
        ok_writes = stats["writes_acknowledged"] > 10 * args.hosts
        result("the workload wrote (acknowledged writes > 10 per host)", ok_writes, f"{stats['writes_acknowledged']}")

        with open(os.path.join(scratch, "history.json"), "w") as f:
            json.dump(history.events, f)
        with open(os.path.join(scratch, "final.json"), "w") as f:
            json.dump({str(k): v for k, v in final.items()}, f)
        with open(os.path.join(scratch, "faults.json"), "w") as f:
            json.dump([dict(x.to_json(), **({"restarts": clock_restarts(x, faults)} if x.kind == "clock" else {})) for x in faults], f)
        problems = bed.isolation_report()
        result("isolation after the run", not problems, "; ".join(problems))
    except Exception as e:  # a broken bed is a failure with its reason, and the logs are kept
        result("the test bed ran", False, repr(e))
    finally:
        bed.destroy()

    failed = sum(1 for _, ok, _ in results if not ok)
    print("figures " + json.dumps(figures), flush=True)
    if failed or args.keep:
        log(f"kept the history, the final states and each agent's log in {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(results) - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
