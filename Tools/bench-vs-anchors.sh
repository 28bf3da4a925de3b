#!/usr/bin/env bash
# Replays workload traces through Arcus and the anchor engines (Loro, Yjs) in one run and prints
# the figures side by side, with Arcus's ratios to the better anchor.
#
#   Tools/bench-vs-anchors.sh [PROFILE:SEED ...]     default: fleet:1 mesh:7
#
# Arcus syncs through sync sessions between stores (ARCUS_BENCH_EXCHANGE=protocol, the default)
# or hands the codec's frames over directly (ARCUS_BENCH_EXCHANGE=frames: the codec's own replay).
# Its replicas' stores are in memory (ARCUS_BENCH_STORE=memory, the default) or SQLite files
# (ARCUS_BENCH_STORE=sqlite). Replicas keep ARCUS_BENCH_CONFLICTS conflicts per field (default 0,
# the agent's: the conflict view off; 4 turns it on).
#
# Machines here are shared and noisy: each engine runs ARCUS_BENCH_REPEAT times (default 3),
# alternating, and the table shows each engine's median run by replay time.
#
# Traces come from shared/bench/gen_trace.py (ARCUS_BENCH_DIR, default ../shared/bench). Without
# it, the committed smoke trace is replayed by Arcus alone. Needs a release build of arcus and
# the anchors venv (Tools/install-deps.sh --anchors).
set -euo pipefail
cd "$(dirname "$0")/.."
bench="${ARCUS_BENCH_DIR:-../shared/bench}"
arcus=.build/release/arcus
python=.build/anchors-venv/bin/python3
[ -x "$python" ] || python=python3
[ -x "$arcus" ] || { echo "error: build first: swift build -c release --product arcus" >&2; exit 1; }

if [ ! -f "$bench/gen_trace.py" ]; then
    echo "note: $bench/gen_trace.py not found (set ARCUS_BENCH_DIR); replaying the smoke fixture without anchors"
    "$arcus" bench trace Tests/ArcusAgentTests/Fixtures/smoke-seed1.jsonl
    exit 0
fi

mkdir -p .build/traces
for spec in "${@:-fleet:1 mesh:7}"; do
    for one in $spec; do
        profile="${one%%:*}"; seed="${one##*:}"
        trace=".build/traces/$profile-$seed.jsonl"
        [ -f "$trace" ] || "$python" "$bench/gen_trace.py" --profile "$profile" --seed "$seed" > "$trace"
        echo "== $profile seed $seed ($trace)"
        {
            for _ in $(seq "${ARCUS_BENCH_REPEAT:-3}"); do
                "$python" "$bench/anchors.py" "$trace"
                "$arcus" bench trace "$trace" --exchange "${ARCUS_BENCH_EXCHANGE:-protocol}" --store "${ARCUS_BENCH_STORE:-memory}" \
                    --conflicts-per-field "${ARCUS_BENCH_CONFLICTS:-0}" --quiet
            done
        } | "$python" Tools/compare-figures.py
    done
done
