#!/usr/bin/env python3
"""Reads figure lines (one JSON object per engine and run, shared/bench/TRACE.md) on stdin and
prints a side-by-side table with Arcus's ratios to the better anchor, and whether each goal is
met: wire and snapshot bytes at most half the better anchor's; replay through sync sessions at
most Loro's with the in-memory store and twice Loro's with the SQLite store (issue 20), or, for
the codec alone (`--exchange frames`), at most half Loro's. When an engine ran several times,
its run with the median replay time is shown."""
import json
import sys

rows = [json.loads(line) for line in sys.stdin if line.strip().startswith("{")]
runs = {}
for r in rows:
    runs.setdefault(r["engine"], []).append(r)
by = {e: sorted(rs, key=lambda r: r["replay_s"])[len(rs) // 2] for e, rs in runs.items()}
if any(len(rs) > 1 for rs in runs.values()):
    print("replay_s of every run: " + "; ".join(f"{e} {[r['replay_s'] for r in rs]}" for e, rs in runs.items()))
keys = ["wire_bytes", "snapshot_bytes", "replay_s", "snapshot_encode_s", "snapshot_decode_s", "converged", "state_json_bytes"]
engines = [e for e in ["loro", "yjs", "arcus"] if e in by]
print(f"{'':<20}" + "".join(f"{e:>14}" for e in engines))
for k in keys:
    print(f"{k:<20}" + "".join(f"{str(by[e].get(k, '')):>14}" for e in engines))
a = by.get("arcus")
anchors = [by[e] for e in ["loro", "yjs"] if e in by]
if a and anchors:
    def ratio(key, against):
        return a[key] / against if against else float("nan")
    wire = ratio("wire_bytes", min(x["wire_bytes"] for x in anchors))
    snap = ratio("snapshot_bytes", min(x["snapshot_bytes"] for x in anchors))
    replay = ratio("replay_s", by["loro"]["replay_s"]) if "loro" in by else float("nan")
    def verdict(r, goal=0.5):
        return "met" if r <= goal else "NOT met"
    if a.get("exchange", "frames") == "frames":
        replay_note = f"codec alone, goal 0.5: {verdict(replay)}"
    else:
        goal = 2.0 if a.get("store") == "sqlite" else 1.0
        replay_note = f"through sync sessions, {a.get('store', 'memory')} store, goal {goal}: {verdict(replay, goal)}"
    print(f"arcus / better anchor: wire {wire:.3f} ({verdict(wire)}), snapshot {snap:.3f} ({verdict(snap)}); "
          f"arcus / loro replay {replay:.3f} ({replay_note}); converged {a['converged']}")
if a and "idle_exchange_us" in a:
    print(f"arcus sync between two replicas already in sync: {a['idle_exchange_us']} us ({a['idle_exchange_cpu_us']} us CPU), "
          f"{a['idle_exchange_bytes']} B in {a['idle_exchange_frames']} frames; replay beyond it: {a['per_update_us']} us per operation")
    if "per_document_us" in a:
        print(f"arcus documents written: {a['local_changes']} local changes and {a['documents_merged']} merged by syncs, "
              f"{a['per_document_us']} us each beyond the idle exchanges")
