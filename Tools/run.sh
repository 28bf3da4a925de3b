#!/usr/bin/env bash
# The main job, for now: builds the release binary, replays workload traces through Arcus and
# the anchor engines side by side (Tools/bench-vs-anchors.sh), then measures the durable store
# against plain SQLite (arcus bench store). Later issues turn this into a loopback mesh of agents.
#
#   Tools/run.sh [PROFILE:SEED ...]      default traces: fleet:1
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh --anchors
echo "== building arcus (release)"
swift build -c release --product arcus >/dev/null
Tools/bench-vs-anchors.sh "${@:-fleet:1}"
echo "== the store against plain SQLite (100,000 documents)"
.build/release/arcus bench store
