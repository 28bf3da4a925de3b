#!/usr/bin/env bash
# Three `arcus agent` processes on this machine find each other over mDNS (avahi-daemon, confined
# to the loopback interface), link over LAN TCP on 127.0.0.1 with a shared secret, and sync:
# writes made through one agent's HTTP API show up on the others, an agent killed with SIGKILL
# comes back and catches up. Everything it starts it stops on exit (Ctrl-C included).
#
#   Tools/demo.sh [--arcus PATH] [--static] [--keep]
#     --arcus PATH   the arcus binary (default: .build/release/arcus, built if missing)
#     --static       no mDNS: give the agents each other's addresses with --peer
#     --keep         leave the agents running at the end, until Ctrl-C, to try them yourself
#
# Without root (so no avahi-daemon can be started) and none running, the agents are given each
# other's addresses with --peer instead, and each says once that mDNS discovery is off.
set -euo pipefail
cd "$(dirname "$0")/.."

arcus=.build/release/arcus
keep=false
discovery=mdns
while [ $# -gt 0 ]; do
    case "$1" in
        --arcus) arcus="$2"; shift 2 ;;
        --keep) keep=true; shift ;;
        --static) discovery=static; shift ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see Tools/demo.sh --help)" >&2; exit 2 ;;
    esac
done

if [ ! -x "$arcus" ]; then
    echo "== building arcus (release; a few minutes the first time)"
    swift build -c release --product arcus >/dev/null
fi
command -v jq >/dev/null || { echo "error: the demo reads JSON with jq: apt-get install jq (or run Tools/install-deps.sh)" >&2; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/arcus-demo.XXXXXX")
pids=()
avahi_started=false
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if $avahi_started; then Tools/start-avahi.sh stop >/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Discovery: the running avahi-daemon, or one started on lo only, or static peers.
if [ "$discovery" = static ]; then
    echo "== static peers (--peer), no mDNS"
elif dbus-send --system --print-reply --dest=org.freedesktop.Avahi / org.freedesktop.Avahi.Server.GetVersionString >/dev/null 2>&1; then
    echo "== using the avahi-daemon that is running"
elif [ "$(id -u)" -eq 0 ]; then
    echo "== starting D-Bus and avahi-daemon on lo only (Tools/start-avahi.sh; stopped at the end)"
    Tools/start-avahi.sh start | sed 's/^/   /'
    avahi_started=true
else
    echo "== no avahi-daemon and no root to start one: the agents get each other's addresses with --peer"
    discovery=static
fi

"$arcus" mesh secret "$scratch/secret" >/dev/null 2>&1
echo "{\"mesh_secret_file\": \"$scratch/secret\"}" > "$scratch/agent.json"

names=(cabin galley cockpit)
ports=()
for _ in "${names[@]}"; do ports+=("$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"); done
declare -A url

start_agent() {  # start_agent INDEX
    local i=$1 name=${names[$1]} peers=()
    if [ "$discovery" = static ]; then
        for j in "${!names[@]}"; do [ "$j" -lt "$i" ] && peers+=(--peer "127.0.0.1:${ports[$j]}"); done
    fi
    "$arcus" agent --data "$scratch/$name" --name "$name" --config "$scratch/agent.json" --transports lan \
        --listen "127.0.0.1:${ports[$i]}" --http 127.0.0.1:0 --subscribe "SELECT * FROM cars" "${peers[@]}" \
        > "$scratch/$name.ready" 2> "$scratch/$name.log" &
    pids[$i]=$!
    for _ in $(seq 1 300); do
        [ -s "$scratch/$name.ready" ] && break
        kill -0 "${pids[$i]}" 2>/dev/null || { echo "error: agent $name stopped:" >&2; cat "$scratch/$name.log" >&2; exit 1; }
        sleep 0.1
    done
    url[$name]=$(head -1 "$scratch/$name.ready" | jq -r .http)
    printf '   %-8s %s   (data %s, LAN 127.0.0.1:%s)\n' "$name" "${url[$name]}" "$scratch/$name" "${ports[$i]}"
}

echo "== three agents"
for i in "${!names[@]}"; do start_agent "$i"; done

echo "== waiting for them to find each other"
for _ in $(seq 1 300); do
    known=$("$arcus" peers --agent "${url[cabin]}" --json 2>/dev/null | jq '[.peers[]? | select(.hops == 1)] | length' 2>/dev/null || echo 0)
    [ "${known:-0}" -ge 2 ] && break
    sleep 0.1
done
"$arcus" peers --agent "${url[cabin]}" | sed 's/^/   /'

# Each agent's view, as `arcus observe` streams it.
for name in galley cockpit; do
    "$arcus" observe --agent "${url[$name]}" "SELECT * FROM cars" 2>/dev/null \
        | jq --unbuffered -c --arg who "$name" '{($who + " sees"): [.items[] | ._id + " " + (.color // "?")]}' &
    pids+=($!)
done
sleep 1

write() {  # write AGENT ID COLOR
    echo "-- $1 writes $2 ($3)"
    "$arcus" exec --agent "${url[$1]}" "INSERT INTO cars DOCUMENTS ({'_id': '$2', 'color': '$3'}) ON ID CONFLICT DO UPDATE" >/dev/null
    sleep 1
}
echo "== writes through one agent's API reach the others"
write cabin car-1 blue
write galley car-2 red
write cockpit car-1 green

echo "== cockpit is killed (SIGKILL); cabin writes while it is gone; cockpit restarts and catches up"
kill -9 "${pids[2]}"
wait "${pids[2]}" 2>/dev/null || true
write cabin car-3 white
start_agent 2
for _ in $(seq 1 100); do
    "$arcus" exec --agent "${url[cockpit]}" "SELECT * FROM cars WHERE _id = 'car-3'" | grep -q car-3 && break
    sleep 0.1
done
sleep 1

echo "== what each agent holds"
same=true
first=""
for name in "${names[@]}"; do
    held=$("$arcus" exec --agent "${url[$name]}" "SELECT _id, color FROM cars ORDER BY _id")
    printf '   %-8s %s\n' "$name" "$held"
    [ -z "$first" ] && first=$held
    [ "$held" = "$first" ] || same=false
done
if $same; then echo "== converged: all three hold the same cars"; else echo "== NOT converged (logs in $scratch/*.log)"; exit 1; fi

if $keep; then
    # The page wants the agent's token: this link carries it (after the #, which the browser never sends).
    echo "== the agents keep running; open $("$arcus" status --page --agent "${url[cabin]}") for the status page (the mesh graph, links, sync),"
    echo "   or try: $arcus exec --agent ${url[cabin]} \"SELECT * FROM cars\"; $arcus status --agent ${url[cabin]}   (Ctrl-C stops them)"
    wait
fi
