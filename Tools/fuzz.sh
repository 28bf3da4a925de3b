#!/usr/bin/env bash
# Fuzzes every decoder of untrusted bytes with libFuzzer, one target after the other.
#
#   Tools/fuzz.sh [--target NAME] [RUNS] [-- extra libFuzzer flags]      default RUNS: 1000000
#   ARCUS_FUZZ_SECONDS=20 Tools/fuzz.sh 20000     at most 20 s per target (what Tools/test.sh runs)
#
# Targets (`ArcusFuzz list` says which entry point each calls): codec, handshake, certificate,
# session-frame, presence, cloud, lan-hello, ble-hello, mgmt, http-json, dql.
#
# Builds ArcusFuzz with -sanitize=fuzzer,address into .build/fuzz, writes each target's seeds
# (valid inputs: compressed sync frames, handshake transcripts, certificates, presence reports,
# cloud frames, management events, …) into .fuzz/seeds/NAME, and runs RUNS inputs with the
# corpus in .fuzz/corpus/NAME. Inputs up to 64 KiB; a single allocation over 64 MiB, an input
# that takes over 10 s, or a process over 2 GiB is a finding, as is any crash. A finding leaves
# .fuzz/findings/NAME/crash-… (or timeout-…, oom-…); replay it with
# `swift run ArcusFuzz --target NAME .fuzz/findings/NAME/crash-…`. Prints one line per target
# (executions, findings, peak RSS) and exits non-zero if any target had a finding.
set -euo pipefail
cd "$(dirname "$0")/.."

only=""
if [ "${1:-}" = "--target" ]; then
    only="${2:?--target needs a name}"
    shift 2
fi
runs="${1:-1000000}"
shift || true
[ "${1:-}" = "--" ] && shift

echo "== building the fuzz targets (libFuzzer + AddressSanitizer)"
swift build -c release --product ArcusFuzz --scratch-path .build/fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING \
    -Xswiftc -enforce-exclusivity=checked >/dev/null
fuzzer="$PWD/.build/fuzz/release/ArcusFuzz"

targets="$("$fuzzer" list | cut -f1)"
if [ -n "$only" ]; then
    echo "$targets" | grep -qx "$only" || { echo "error: no fuzz target $only; the targets: $(echo $targets)" >&2; exit 2; }
    targets="$only"
fi

time_limit=()
[ -n "${ARCUS_FUZZ_SECONDS:-}" ] && time_limit=(-max_total_time="$ARCUS_FUZZ_SECONDS")

failed=0
for target in $targets; do
    mkdir -p ".fuzz/corpus/$target" ".fuzz/findings/$target"
    rm -rf ".fuzz/seeds/$target"
    "$fuzzer" seed .fuzz/seeds --target "$target" >/dev/null
    log=".fuzz/findings/$target/last-run.log"
    # Findings of this run only: those of earlier runs stay for replaying, and do not count.
    touch "$log.start"
    echo "== fuzzing $target ($runs inputs${ARCUS_FUZZ_SECONDS:+, at most ${ARCUS_FUZZ_SECONDS} s})"
    status=0
    "$fuzzer" --target="$target" ".fuzz/corpus/$target" ".fuzz/seeds/$target" \
        -runs="$runs" "${time_limit[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 \
        -print_final_stats=1 -artifact_prefix=".fuzz/findings/$target/" "$@" >"$log" 2>&1 || status=$?
    executed="$(grep -oE 'stat::number_of_executed_units:[[:space:]]*[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')"
    peak="$(grep -oE 'stat::peak_rss_mb:[[:space:]]*[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')"
    findings="$(find ".fuzz/findings/$target" -newer "$log.start" \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)"
    echo "$target: $executed inputs, $findings findings, peak RSS $peak MB, exit status $status (log: $log)"
    if [ "$status" != 0 ] || [ "$findings" != 0 ]; then
        failed=1
        grep -E "ERROR|==[0-9]+==|Fatal|fuzz invariant|Test unit written" "$log" | head -20 >&2 || true
    fi
done
exit "$failed"
