#!/usr/bin/env bash
# Every benchmark, one JSON line each: builds the release binary, runs loopback meshes (arcus
# demo: 16 peers with links dropping, a chain of 10, grids of 16 to 64, a crowd of 128), replays workload traces
# through Arcus and the anchor engines side by side (Tools/bench-vs-anchors.sh), measures the
# durable store against plain SQLite (arcus bench store), then two agents over loopback TCP
# (arcus bench lan: a fresh peer catching up 100,000 documents, the latency of one update), and
# two agents through a NATS relay (arcus bench cloud, against a nats-server on 127.0.0.1 with
# JetStream from Tools/start-nats.sh, stopped on exit).
#
#   Tools/bench.sh [PROFILE:SEED ...]      default traces: fleet:1
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh --anchors
echo "== building arcus (release)"
swift build -c release --product arcus >/dev/null
echo "== loopback meshes (arcus demo; one JSON line each)"
.build/release/arcus demo --peers 16 --topology random --drops --seconds 60 --quiet
.build/release/arcus demo --peers 10 --topology chain --quiet
for peers in 16 32 64; do .build/release/arcus demo --peers "$peers" --topology mesh --quiet; done
# A crowded hall: each peer hears 20, keeps sessions with at most 4 (README, Crowds).
.build/release/arcus demo --peers 128 --topology random --degree 20 --seed 7 --quiet
Tools/bench-vs-anchors.sh "${@:-fleet:1}"
echo "== the store against plain SQLite (100,000 documents)"
.build/release/arcus bench store
echo "== two agents over loopback TCP (100,000 documents, then 500 single updates)"
.build/release/arcus bench lan
echo "== two agents through a NATS relay on 127.0.0.1 (10,000 documents, then 500 single updates)"
# Tools/start-nats.sh runs one on a free port with JetStream (or reuses the one it already runs).
trap 'Tools/start-nats.sh stop' EXIT
relay="$(Tools/start-nats.sh start 0)"
.build/release/arcus bench cloud --cloud "$relay"
