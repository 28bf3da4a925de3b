#!/usr/bin/env bash
# What a newcomer runs first: installs what is missing, builds the release binary, then
# Tools/demo.sh — three agents on this machine find each other over mDNS on the loopback
# interface, sync writes made through their HTTP APIs, and one comes back from SIGKILL and
# catches up. Options are Tools/demo.sh's (--static, --keep). The benchmarks: Tools/bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
echo "== building arcus (release; a few minutes the first time)"
swift build -c release --product arcus >/dev/null
exec Tools/demo.sh "$@"
