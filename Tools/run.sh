#!/usr/bin/env bash
# The main job, for now: builds the release binary and replays a workload trace through Arcus
# and the anchor engines side by side (Tools/bench-vs-anchors.sh). Later issues turn this into
# a loopback mesh of agents.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh --anchors
echo "== building arcus (release)"
swift build -c release --product arcus >/dev/null
Tools/bench-vs-anchors.sh "${@:-fleet:1}"
