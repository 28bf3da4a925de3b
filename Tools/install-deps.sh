#!/usr/bin/env bash
# Installs what Arcus needs on Debian bookworm (and Raspberry Pi OS), idempotently: packages
# already present are left alone, so running it again costs a second.
#
#   Tools/install-deps.sh            the libraries and daemons builds and tests need
#   Tools/install-deps.sh --anchors  also the Python anchor engines (Loro, Yjs) for benchmarks
set -euo pipefail

packages=(
    libsqlite3-dev libzstd-dev           # store, codec
    libbluetooth-dev                     # Bluetooth LE transport (BlueZ)
    libavahi-client-dev avahi-daemon     # LAN discovery (mDNS)
    dbus                                 # avahi-daemon and bluetoothd talk over the system bus
    iproute2                             # `ip link set lo multicast on`, for mDNS on loopback in tests;
                                         # namespaces, veth, a bridge and tc for Tools/test-network.sh
    nftables util-linux                  # its faults (loss, drops, duplication); nsenter and unshare
    libnats-dev nats-server              # cloud relay
    openssl                              # the cloud relay's TLS tests make a CA and a certificate
    python3 python3-venv                 # trace generator and anchor engines
    jq                                   # Tools/demo.sh reads the agents' JSON lines
    chromium                             # the agent's status page is tested in a headless browser
)

if ! command -v swift >/dev/null 2>&1; then
    echo "error: the Swift toolchain (6.0 or later) is not on PATH." >&2
    echo "       Install it from https://www.swift.org/install/linux/ and run this again." >&2
    exit 1
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # No daemons are started by the install itself; the test command starts what it needs.
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--anchors" ]; then
    venv="$(dirname "$0")/../.build/anchors-venv"
    if [ ! -x "$venv/bin/python3" ]; then
        echo "== creating $venv with the anchor engines (loro, pycrdt)"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q loro pycrdt
    fi
fi
