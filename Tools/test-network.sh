#!/usr/bin/env bash
# Agents on a real network between hosts, under faults, checked in the manner of Jepsen.
#
# N hosts, each a network namespace with its own D-Bus bus, avahi-daemon and `arcus agent`
# (its own data directory), on a Linux bridge in a namespace of its own; no uplink, private
# addresses inside the namespaces only, so no packet leaves them and no mDNS reaches a host
# interface. Every host writes through its HTTP API while faults come on a seeded schedule
# (partitions, one-way drops, a host cut off, 10 or 30% loss, duplication, a BLE-like 100 kbit/s
# rate limit, agent SIGKILL and restart; delay, jitter and reordering where the kernel has netem),
# then everything heals and the checker (Tools/network/checker.py) compares what every host holds
# with what every API acknowledged. Its own tests run first. Needs root (namespaces, nftables).
#
#   Tools/test-network.sh                          the CI run: 4 hosts, 30 s of faults
#   Tools/test-network.sh --hosts 16 --seconds 60  the longer run (Docs/Network.md)
#   Tools/test-network.sh --seed S ...             replays a run's faults and operations
#   Tools/test-network.sh --discovery static       agents given each other's addresses, no mDNS
#   ARCUS=PATH                                     the arcus binary (default .build/debug/arcus)
#
# The last line is `N passed, M failed`; a failed run keeps its history, the hosts' final states
# and every agent's log, and says where.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" -eq 0 ] || { echo "error: the network test bed makes namespaces and nftables rules: run it as root" >&2; exit 1; }
for tool in ip nft tc nsenter unshare avahi-daemon dbus-daemon python3; do
    command -v "$tool" >/dev/null || { echo "error: $tool is missing: run Tools/install-deps.sh" >&2; exit 1; }
done
arcus="${ARCUS:-.build/debug/arcus}"
[ -x "$arcus" ] || { echo "error: no $arcus: swift build first (or ARCUS=PATH)" >&2; exit 1; }

echo "== the checker's own tests"
checker_out=$(cd Tools/network && python3 -m unittest test_checker 2>&1) || { echo "$checker_out"; echo "0 passed, 1 failed"; exit 1; }
echo "$checker_out" | tail -3

args=("$@")
[[ " ${args[*]} " == *" --hosts "* ]] || args+=(--hosts 4)
[[ " ${args[*]} " == *" --seconds "* ]] || args+=(--seconds 30)
echo "== the network run"
python3 Tools/network/run.py --arcus "$arcus" "${args[@]}"
