#!/usr/bin/env bash
# Runs inside the VM that Tools/test-power.sh boots, once per boot. The agent's data directory
# lives on the VM's virtual disk (ext4 on virtio-blk; the host's cache is off, so what the guest
# has fsynced is on the host's file and nothing else is). First it checks what the boot before
# left (SQLite's integrity check, the documents the agent holds, a second agent syncing them all),
# then it writes through the agent's HTTP API, printing each acknowledged write, until the host
# cuts the power (kills qemu). Lines starting with [vm] or [ack] go back to the host.
#
#   guest.sh ARCUS OUT BOOT DURABILITY
arcus="$1"
out="$2"
boot="$3"
durability="$4"
say() { echo "[vm] $*"; }

# The host's files are read-only here; /run is the guest's own.
scratch=/run/arcus-scratch
mkdir -p "$scratch" /run/arcus-disk && mount -t tmpfs tmpfs "$scratch"
ip link set lo up
if ! mount -t ext4 /dev/vda /run/arcus-disk; then
    say "FAIL: mount /dev/vda (the virtual disk): $(ls /dev/vd* 2>&1 | tr '\n' ' ')"
    exit 0
fi
data=/run/arcus-disk/agent
token_of() { cat "$1/api-token"; }
execute() {  # execute PORT DATA STATEMENT -> the JSON answer
    curl -s -m 30 -H "Authorization: Bearer $(token_of "$2")" -H 'Content-Type: application/json' \
        -d "{\"statement\": \"$3\"}" "http://127.0.0.1:$1/v1/execute"
}
start_agent() {  # start_agent DATA LAN_PORT HTTP_PORT LOG [--peer HOST:PORT]
    local dir=$1 lan=$2 http=$3 log=$4
    shift 4
    "$arcus" agent --data "$dir" --durability "$durability" --transports lan --listen "127.0.0.1:$lan" \
        --http "127.0.0.1:$http" --config "$out/agent.json" --subscribe "SELECT * FROM docs" "$@" \
        > "$scratch/ready-$http" 2> "$log" &
    for _ in $(seq 1 600); do
        [ -s "$scratch/ready-$http" ] && return 0
        sleep 0.1
    done
    return 1
}

if [ -d "$data" ]; then
    integrity=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])" "$data/store.sqlite" 2>&1)
    say "integrity $integrity"
fi
if ! start_agent "$data" 7000 4747 "$out/agent-$boot.log"; then
    say "FAIL: the agent did not start (log: agent-$boot.log)"
    exit 0
fi
say "agent started"
execute 4747 "$data" "SELECT _id FROM docs" > "$out/held-$boot.json"
held=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['items']))" "$out/held-$boot.json")
say "held $held"

# A second agent, on a fresh directory: the first must sync it everything it holds.
if start_agent "$scratch/peer" 7001 4748 "$out/peer-$boot.log" --peer 127.0.0.1:7000; then
    synced=0
    for _ in $(seq 1 1200); do
        synced=$(execute 4748 "$scratch/peer" "SELECT _id FROM docs" | python3 -c "import json,sys; print(len(json.load(sys.stdin)['items']))" 2>/dev/null || echo 0)
        [ "$synced" -ge "$held" ] && break
        sleep 0.25
    done
    say "synced $synced of $held"
    kill %2 2>/dev/null
else
    say "synced 0 of $held (the second agent did not start)"
fi

say "writing"
exec python3 -u - "$boot" "$(token_of "$data")" <<'PY'
import json, sys, urllib.request
boot, token = sys.argv[1], sys.argv[2]
n = 0
while True:
    n += 1
    doc_id = f"b{boot}-{n}"
    body = json.dumps({"statement": "INSERT INTO docs DOCUMENTS (:doc)", "args": {"doc": {"_id": doc_id, "n": n}}}).encode()
    request = urllib.request.Request("http://127.0.0.1:4747/v1/execute", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            if doc_id in json.loads(response.read())["mutatedDocumentIDs"]:
                print(f"[ack] {doc_id}", flush=True)
    except Exception as error:
        print(f"[vm] write {doc_id} failed: {error}", flush=True)
PY
