#!/usr/bin/env bash
# Runs a nats-server with JetStream on 127.0.0.1, as the cloud relay for tests, demos and benches,
# and stops it again. It never listens on another address.
#
#   Tools/start-nats.sh start [PORT]   start one (default port 4222; 0 picks a free one) and print
#                                      its URL; a no-op if the one it started still runs
#   Tools/start-nats.sh url            the URL of the running one
#   Tools/start-nats.sh stop           stop the one `start` started
#
# Its store (JetStream's file storage), log and pid live in .build/nats-test/.
set -euo pipefail
cd "$(dirname "$0")/.."

state=".build/nats-test"
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
    if [ -f "$state/pid" ] && alive "$(cat "$state/pid")"; then
        cat "$state/url"
        return
    fi
    local server
    server="$(command -v nats-server || true)"
    [ -n "$server" ] || [ ! -x /usr/sbin/nats-server ] || server=/usr/sbin/nats-server
    [ -n "$server" ] || { echo "error: nats-server is not installed: run Tools/install-deps.sh" >&2; exit 1; }
    local port="${1:-4222}"
    [ "$port" != "0" ] || port="$(free_port)"
    mkdir -p "$state/store"
    # Detached from this shell's output, so that a pipe reading the test command's output ends.
    "$server" -a 127.0.0.1 -p "$port" -js -sd "$state/store" -l "$state/server.log" -P "$state/pid" </dev/null >/dev/null 2>&1 &
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "nats://127.0.0.1:$port" > "$state/url"
            cat "$state/url"
            return
        fi
        sleep 0.1
    done
    echo "error: nats-server did not answer on 127.0.0.1:$port within 10 s; its log:" >&2
    tail -n 20 "$state/server.log" >&2 || true
    exit 1
}

stop() {
    if [ -f "$state/pid" ] && alive "$(cat "$state/pid")"; then
        local pid
        pid="$(cat "$state/pid")"
        kill -TERM "$pid"
        for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
        alive "$pid" && kill -KILL "$pid"
    fi
    rm -f "$state/pid" "$state/url"
}

case "${1:-}" in
    start) start "${2:-4222}" ;;
    url) cat "$state/url" ;;
    stop) stop ;;
    *) echo "usage: Tools/start-nats.sh start [PORT] | url | stop" >&2; exit 2 ;;
esac
