#!/usr/bin/env bash
# Makes sure an avahi-daemon answers on the D-Bus system bus, for the LAN discovery tests, and
# undoes what it did. In a container neither the bus nor the daemon runs, so this starts them,
# confined to the loopback interface: mDNS is never published on a real network from a test.
#
#   Tools/start-avahi.sh start   start what is missing (the bus, the daemon); no-op if avahi answers
#   Tools/start-avahi.sh stop    stop only what `start` started, and restore lo's multicast flag
#   Tools/start-avahi.sh restart-daemon   stop and start again the avahi-daemon `start` started
#                                (the tests' daemon-restart case); fails for a daemon it did not start
#
# What was started is recorded in .build/avahi-test/, so `stop` works from another shell.
set -euo pipefail
cd "$(dirname "$0")/.."

state=".build/avahi-test"
config="$state/avahi-daemon.conf"

bus_answers() {
    dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.GetId >/dev/null 2>&1
}
avahi_answers() {
    dbus-send --system --print-reply --dest=org.freedesktop.Avahi / \
        org.freedesktop.Avahi.Server.GetVersionString >/dev/null 2>&1
}
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

start() {
    if avahi_answers; then
        echo "avahi-daemon already answers on the system bus; using it"
        return
    fi
    [ "$(id -u)" -eq 0 ] || { echo "error: starting dbus-daemon and avahi-daemon needs root" >&2; exit 1; }
    mkdir -p "$state"

    if ! bus_answers; then
        mkdir -p /run/dbus
        # A pid file left by a bus that died stops a new one from starting.
        if [ -f /run/dbus/pid ] && ! alive "$(cat /run/dbus/pid)"; then rm -f /run/dbus/pid; fi
        dbus-daemon --system --fork --print-pid > "$state/dbus.pid"
        echo "started a D-Bus system bus (pid $(cat "$state/dbus.pid"))"
    fi

    # mDNS on loopback needs multicast there; note whether it was off, to turn it off again.
    if ! ip link show lo | grep -q MULTICAST; then
        ip link set lo multicast on
        touch "$state/lo-multicast-was-off"
    fi

    # Loopback only (Tools/avahi-test.conf.in); the machine's own host name.
    sed -e 's/@INTERFACE@/lo/' -e '/@HOST_NAME@/d' Tools/avahi-test.conf.in > "$config"
    start_daemon
}

start_daemon() {
    if [ -f /run/avahi-daemon/pid ] && ! alive "$(cat /run/avahi-daemon/pid)"; then rm -f /run/avahi-daemon/pid; fi
    avahi-daemon --daemonize --no-chroot --file="$config"
    for _ in $(seq 1 300); do
        avahi_answers && break
        sleep 0.1
    done
    if ! avahi_answers; then
        echo "error: avahi-daemon did not come up on the system bus within 30 s (see syslog or run" >&2
        echo "       avahi-daemon --no-chroot --file=$config --debug)" >&2
        exit 1
    fi
    cat /run/avahi-daemon/pid > "$state/avahi.pid"
    echo "started avahi-daemon on lo only (pid $(cat "$state/avahi.pid"), config $config)"
}

stop_daemon() {
    pid="$(cat "$state/avahi.pid")"
    if alive "$pid"; then
        kill "$pid"
        for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
        echo "stopped avahi-daemon (pid $pid)"
    fi
    rm -f "$state/avahi.pid"
}

restart_daemon() {
    if [ ! -f "$state/avahi.pid" ]; then
        echo "error: this avahi-daemon was not started by $0 start; not restarting it" >&2
        exit 1
    fi
    stop_daemon
    start_daemon
}

stop() {
    if [ -f "$state/avahi.pid" ]; then stop_daemon; fi
    if [ -f "$state/dbus.pid" ]; then
        pid="$(cat "$state/dbus.pid")"
        if alive "$pid"; then
            kill "$pid"
            for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
            rm -f /run/dbus/pid
            echo "stopped the D-Bus system bus (pid $pid)"
        fi
        rm -f "$state/dbus.pid"
    fi
    if [ -f "$state/lo-multicast-was-off" ]; then
        ip link set lo multicast off
        rm -f "$state/lo-multicast-was-off"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    restart-daemon) restart_daemon ;;
    *) echo "usage: $0 start|stop|restart-daemon" >&2; exit 2 ;;
esac
