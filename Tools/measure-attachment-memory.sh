#!/usr/bin/env bash
# Peak resident memory of two agents while one fetches a large attachment from the other over
# LAN TCP on 127.0.0.1 and verifies it (issue 17, finding 12: no blob is held whole to hash it).
# Agent a takes the blob through `arcus attachment put` (streamed upload, hashed as it is
# stored); agent b fetches it through `arcus attachment get` (chunks from a, hashed as they
# arrive, verified, then served to the CLI a piece at a time). Prints one JSON line: each agent's
# peak RSS (VmHWM) before and after, and whether the bytes came out the same.
#
#   Tools/measure-attachment-memory.sh [MIB]      default 256 (the largest upload the API takes)
#   ARCUS_BINARY=.build/release/arcus Tools/measure-attachment-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mib="${1:-256}"
arcus="${ARCUS_BINARY:-.build/debug/arcus}"
[ -x "$arcus" ] || { echo "error: build first: swift build --product arcus (or set ARCUS_BINARY)" >&2; exit 1; }

scratch="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; fi
    done
    rm -rf "$scratch"
}
trap cleanup EXIT

head -c 32 /dev/urandom >"$scratch/secret"
chmod 600 "$scratch/secret"
printf '{"mesh_secret_file": "%s"}\n' "$scratch/secret" >"$scratch/agent.json"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

# start NAME ARGS…: runs an agent, waits for its ready line; sets $url and $pid.
start() {
    local name="$1"
    shift
    "$arcus" agent --data "$scratch/$name" --config "$scratch/agent.json" --http 127.0.0.1:0 --name "$name" \
        --transports lan --subscribe "SELECT * FROM photos" "$@" >"$scratch/$name.out" 2>"$scratch/$name.err" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 600); do grep -q '"ready"' "$scratch/$name.out" 2>/dev/null && break; sleep 0.1; done
    grep -q '"ready"' "$scratch/$name.out" || { echo "error: agent $name did not start:" >&2; cat "$scratch/$name.err" >&2; exit 1; }
    url="$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["http"])' "$scratch/$name.out")"
}
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

start b --listen "127.0.0.1:$port"
b_url="$url" b_pid="$pid"
start a --listen 127.0.0.1:0 --peer "127.0.0.1:$port"
a_url="$url" a_pid="$pid"

head -c "$((mib << 20))" /dev/urandom >"$scratch/blob"
sleep 2
a_before="$(hwm "$a_pid")" b_before="$(hwm "$b_pid")"
"$arcus" attachment put --agent "$a_url" "$scratch/blob" --collection photos --id big --field image >"$scratch/token.json"
hash="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["_attachment"])' "$scratch/token.json")"
for _ in $(seq 1 600); do
    "$arcus" exec --agent "$b_url" "SELECT * FROM photos" 2>/dev/null | grep -q "$hash" && break
    sleep 0.1
done
"$arcus" attachment get --agent "$b_url" "$hash" --out "$scratch/out" 2>/dev/null
a_after="$(hwm "$a_pid")" b_after="$(hwm "$b_pid")"
same=false
cmp -s "$scratch/blob" "$scratch/out" && same=true
python3 - "$mib" "$a_before" "$a_after" "$b_before" "$b_after" "$same" "$arcus" <<'PY'
import json, sys
mib, a0, a1, b0, b1 = map(int, sys.argv[1:6])
print(json.dumps({
    "measure": "attachment_memory", "blob_mib": mib, "binary": sys.argv[7],
    "uploader_peak_rss_mb": {"before": round(a0 / 1024, 1), "after": round(a1 / 1024, 1)},
    "fetcher_peak_rss_mb": {"before": round(b0 / 1024, 1), "after": round(b1 / 1024, 1)},
    "verified_and_equal": sys.argv[6] == "true",
}))
PY
