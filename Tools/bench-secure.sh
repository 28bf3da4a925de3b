#!/usr/bin/env bash
# The wire figures of `arcus bench trace` with encryption off and on (a shared secret, and
# certificates: every replica a relay, writers' certificates passed on ahead of their writes and
# checked by every receiver), beside the better anchor (Loro, Yjs), one row per trace:
#
#   Tools/bench-secure.sh [PROFILE:SEED ...]     default: fleet:1 fleet:2 mesh:3 mesh:7 smoke:5 smoke:20
#
# Bytes are deterministic for a trace, so each engine runs once. Needs a release build of arcus
# and the anchors venv (Tools/install-deps.sh --anchors); traces come from
# ../shared/bench/gen_trace.py (ARCUS_BENCH_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bench="${ARCUS_BENCH_DIR:-../shared/bench}"
arcus=.build/release/arcus
python=.build/anchors-venv/bin/python3
[ -x "$python" ] || python=python3
[ -x "$arcus" ] || { echo "error: build first: swift build -c release --product arcus" >&2; exit 1; }
[ -f "$bench/gen_trace.py" ] || { echo "error: $bench/gen_trace.py not found; set ARCUS_BENCH_DIR" >&2; exit 1; }

mkdir -p .build/traces
printf '%-10s %12s %12s %12s %8s %12s %8s %12s %8s %8s %8s %9s %9s %9s\n' trace anchor plain secure "+%" handshake certified "+%" plain/a secure/a cert/a snap/a s-snap/a c-snap/a
for one in ${@:-fleet:1 fleet:2 mesh:3 mesh:7 smoke:5 smoke:20}; do
    profile="${one%%:*}"; seed="${one##*:}"
    trace=".build/traces/$profile-$seed.jsonl"
    [ -f "$trace" ] || "$python" "$bench/gen_trace.py" --profile "$profile" --seed "$seed" > "$trace"
    {
        "$python" "$bench/anchors.py" "$trace"
        echo "PLAIN $("$arcus" bench trace "$trace" --quiet)"
        echo "SECURE $("$arcus" bench trace "$trace" --secure --quiet)"
        echo "CERTIFIED $("$arcus" bench trace "$trace" --secure --credential certificates --quiet)"
    } | "$python" -c '
import json, sys
name = sys.argv[1]
anchors, plain, secure, certified = [], None, None, None
for line in sys.stdin:
    line = line.strip()
    if line.startswith("PLAIN "): plain = json.loads(line[6:])
    elif line.startswith("SECURE "): secure = json.loads(line[7:])
    elif line.startswith("CERTIFIED "): certified = json.loads(line[10:])
    elif line.startswith("{"): anchors.append(json.loads(line))
wire = min(a["wire_bytes"] for a in anchors)
snap = min(a["snapshot_bytes"] for a in anchors)
ok = plain["converged"] and secure["converged"] and certified["converged"]
print("%-10s %12d %12d %12d %7.2f%% %12d %8d %7.2f%% %8.3f %8.3f %8.3f %9.3f %9.3f %9.3f%s" % (
    name, wire, plain["wire_bytes"], secure["wire_bytes"], 100.0 * (secure["wire_bytes"] / plain["wire_bytes"] - 1),
    secure["handshake_bytes"], certified["wire_bytes"], 100.0 * (certified["wire_bytes"] / secure["wire_bytes"] - 1),
    plain["wire_bytes"] / wire, secure["wire_bytes"] / wire, certified["wire_bytes"] / wire,
    plain["snapshot_bytes"] / snap, secure["snapshot_bytes"] / snap, certified["snapshot_bytes"] / snap, "" if ok else "  NOT CONVERGED"))
' "$profile-$seed"
done
