#!/usr/bin/env bash
# The example apps, built against the `Arcus` library product as an app would use it, then run:
# two sensor loggers, each in its own process and data directory, linked over LAN TCP on
# 127.0.0.1 with a shared secret; each writes three readings and must see the other's three.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== building Examples/SensorLogger against the Arcus library"
swift build --package-path Examples/SensorLogger
logger="Examples/SensorLogger/.build/debug/sensor-logger"
arcus="${ARCUS_BIN:-.build/debug/arcus}"

scratch="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$scratch"
}
trap cleanup EXIT

"$arcus" mesh secret "$scratch/mesh.secret" > /dev/null
# Two free ports on loopback, picked by the kernel.
read -r port_a port_b < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')

"$logger" --data "$scratch/a" --name sensor-a --listen "127.0.0.1:$port_a" --secret "$scratch/mesh.secret" \
    --readings 3 --expect 3 --timeout 60 > "$scratch/a.log" 2>&1 &
pids+=($!)
"$logger" --data "$scratch/b" --name sensor-b --listen "127.0.0.1:$port_b" --peer "127.0.0.1:$port_a" --secret "$scratch/mesh.secret" \
    --readings 3 --expect 3 --timeout 60 > "$scratch/b.log" 2>&1 &
pids+=($!)

status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
pids=()
cat "$scratch/a.log" "$scratch/b.log"
if [ "$status" -ne 0 ]; then
    echo "the sensor loggers did not each see the other's readings" >&2
    exit 1
fi
echo "== the sensor loggers each saw the other's readings"
