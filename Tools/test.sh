#!/usr/bin/env bash
# The test command (what CI runs): installs what the tests need, builds, runs every test, then a
# short bounded libFuzzer run of every fuzz target (Tools/fuzz.sh; it fails on any finding).
#
#   Tools/test.sh                 everything
#   ARCUS_FUZZ_RUNS=0 Tools/test.sh   skip the libFuzzer run
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh

echo "== building"
swift build --build-tests

# Nine passes. Swift Testing runs a process's tests side by side on the cooperative threads (two
# on a 2-core machine), and the CPU-bound property tests hold a thread for seconds at a time; the
# suites that keep time (sync timeouts, the link emulation's rates and latencies, the loopback
# mesh) therefore run in processes of their own, where nothing starves them.
echo "== testing the CRDTs, the codec and the store"
swift test --skip-build --filter "ArcusCRDTTests|ArcusCodecTests|ArcusStoreTests"
echo "== testing sync, the agent, and the Arcus library (EmbeddedAgent)"
swift test --skip-build --filter "ArcusSyncTests|ArcusAgentTests|ArcusTests\." --skip "MeshDemoTests|AgentAvahiTests|AgentCloudTests|CloudBenchTests|AgentTombstoneTests|TraceBenchTests|FlowControlTests"
# The trace replays and the flow-control floods keep a cooperative thread busy for seconds at a
# time: beside the phase above they held the pool so long that its in-process agents' heartbeats,
# acks and turns on their links waited tens of seconds, and two or three of its sync tests ran
# out of time (4 runs in 4 with the machine busy, 2026-12-02). Alone they take about 10 s.
echo "== testing trace replays through sync sessions, and flow control"
swift test --skip-build --filter "TraceBenchTests|FlowControlTests"
# Three agent processes started and stopped one after another: beside the phase above it added
# to the load under which that phase's patient tests ran out of patience (CI, 2026-11-28 and -29).
echo "== testing reaped tombstones between agent processes"
swift test --skip-build --filter "AgentTombstoneTests"
echo "== testing links: the emulation, the message channel, the secure link, LAN TCP, Bluetooth (emulated radio)"
swift test --skip-build --filter "ArcusMeshTests|ArcusLANTests|ArcusBluetoothTests" --skip "ArcusMeshTests\.(Session|SimultaneousDial|Presence)|ArcusLANTests\.Avahi"
echo "== testing sessions over links: failover (and its demo), dials, presence"
swift test --skip-build --filter "ArcusMeshTests\.(Session|SimultaneousDial|Presence)|FailoverMeshDemoTests"
echo "== testing the loopback mesh (arcus demo)"
swift test --skip-build --filter "MeshDemoTests" --skip "FailoverMeshDemoTests"

# The clients of the HTTP API and the library, each against real agents: the Python client installed
# with pip into a fresh venv; schemathesis against the API's own OpenAPI description; the example
# app built on the Arcus library (a package of its own: about 10 minutes to build on 2 cores).
echo "== testing the Python client against agent processes (Tools/test-python-client.sh)"
Tools/test-python-client.sh
echo "== testing the HTTP API against its OpenAPI description with schemathesis (Tools/test-api-schema.sh)"
Tools/test-api-schema.sh
echo "== building and running the example app on the Arcus library (Tools/test-examples.sh)"
Tools/test-examples.sh

# LAN discovery needs a real avahi-daemon; in a container this starts one (and a D-Bus system
# bus) confined to loopback, and the trap stops what it started, whatever the tests do.
echo "== testing LAN discovery through avahi-daemon, and agents that find each other with it"
trap 'Tools/start-avahi.sh stop' EXIT
Tools/start-avahi.sh start
# The daemon was just started: if it still does not answer, that is a failure, not a skip. One
# test at a time: one of them restarts the daemon under the others.
CI="${CI:-true}" swift test --skip-build --no-parallel --filter "ArcusLANTests\.Avahi|AgentAvahiTests"
Tools/start-avahi.sh stop
trap - EXIT

# The cloud relay: a real nats-server with JetStream on 127.0.0.1. The shared one serves the
# conformance suites; the tests that restart the relay or cut a peer off start their own.
echo "== testing the cloud relay through nats-server"
trap 'Tools/start-nats.sh stop' EXIT
ARCUS_TEST_NATS_URL="$(Tools/start-nats.sh start 0)"
export ARCUS_TEST_NATS_URL
swift test --skip-build --filter "ArcusCloudTests|AgentCloudTests|CloudBenchTests"
Tools/start-nats.sh stop
unset ARCUS_TEST_NATS_URL
trap - EXIT

# Agents on a network between hosts: network namespaces on a bridge, avahi-daemon per host,
# faults on a seeded schedule, and the checker (Tools/test-network.sh; about 2 minutes).
echo "== testing agents across a network of hosts under faults (Tools/test-network.sh)"
Tools/test-network.sh

# Bluetooth on the Linux kernel's own stack: Debian's kernel in qemu (TCG) with three virtual
# controllers, the tests built above run inside. A machine that cannot boot it fails here, with
# the reason (Hardware/Bluetooth.md); about 12 minutes on two cores.
echo "== testing Bluetooth on the Linux kernel's stack, in a VM (Tools/test-bluetooth.sh)"
Tools/test-bluetooth.sh

# Power cuts: an agent in the same kind of VM writes to a virtual disk and the VM is killed at
# random moments, 20 times; every acknowledged write must survive (Tools/test-power.sh; about
# 15 minutes under TCG).
echo "== testing acknowledged writes across 20 power cuts, in a VM (Tools/test-power.sh)"
Tools/test-power.sh

# Every decoder of untrusted bytes under libFuzzer, briefly: the long runs are Tools/fuzz.sh's.
runs="${ARCUS_FUZZ_RUNS:-20000}"
if [ "$runs" != "0" ]; then
    echo "== fuzzing every decoder of untrusted bytes ($runs inputs or ${ARCUS_FUZZ_SECONDS:-20} s per target)"
    ARCUS_FUZZ_SECONDS="${ARCUS_FUZZ_SECONDS:-20}" Tools/fuzz.sh "$runs"
fi
echo "== all tests passed"
