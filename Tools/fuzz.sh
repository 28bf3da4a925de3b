#!/usr/bin/env bash
# Fuzzes the codec's decoders with libFuzzer.
#
#   Tools/fuzz.sh [RUNS] [-- extra libFuzzer flags]      default RUNS: 1000000
#
# Builds ArcusCodecFuzz with -sanitize=fuzzer,address into .build/fuzz, seeds a corpus of valid
# frames in .fuzz/corpus, and runs RUNS inputs. A finding leaves a crash-* file in .fuzz/;
# replay it with `swift run ArcusCodecFuzz .fuzz/crash-…`. Exits non-zero on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
shift || true
[ "${1:-}" = "--" ] && shift

echo "== building the fuzz target (libFuzzer + AddressSanitizer)"
swift build -c release --product ArcusCodecFuzz --scratch-path .build/fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING \
    -Xswiftc -enforce-exclusivity=checked >/dev/null

mkdir -p .fuzz/corpus
if [ -z "$(ls -A .fuzz/corpus)" ]; then
    swift run -c release --scratch-path .build/fuzz-seed ArcusCodecFuzz seed .fuzz/corpus >/dev/null
fi

echo "== fuzzing $runs inputs"
cd .fuzz
../.build/fuzz/release/ArcusCodecFuzz corpus -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$@"
