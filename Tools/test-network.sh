#!/usr/bin/env bash
# Agents on a real network between hosts, under faults, checked in the manner of Jepsen.
#
# N hosts, each a network namespace with its own D-Bus bus, avahi-daemon and `arcus agent`
# (its own data directory), on a Linux bridge in a namespace of its own; no uplink, private
# addresses inside the namespaces only, so no packet leaves them and no mDNS reaches a host
# interface. Every host writes through its HTTP API while faults come on a seeded schedule
# (partitions, one-way drops, a host cut off, 10 or 30% loss, duplication, a BLE-like 100 kbit/s
# rate limit, agent SIGKILL and restart, one agent's wall clock stepped forward by minutes to hours
# or back (Tools/network/wallclock.c, preloaded; the machine's clock is untouched); delay, jitter
# and reordering where the kernel has netem),
# then everything heals and the checker (Tools/network/checker.py) compares what every host holds
# with what every API acknowledged. Its own tests run first. Needs root (namespaces, nftables).
#
#   Tools/test-network.sh                          the CI run: 4 hosts, 30 s of faults
#   Tools/test-network.sh --hosts 16 --seconds 60  the longer run (Docs/Network.md)
#   Tools/test-network.sh --seed S ...             replays a run's faults and operations
#   Tools/test-network.sh --discovery static       agents given each other's addresses, no mDNS
#   Tools/test-network.sh --loss P                 P% of frames dropped all through, heal included
#   Tools/test-network.sh --vm --jitter 200ms      the same bed in a VM with Debian's kernel, which
#                                                  has netem (this machine's has not): delay, jitter
#                                                  and reordering faults, and --jitter MS [--delay MS]
#                                                  (each frame waits delay ± jitter, uniform; the
#                                                  delay defaults to the jitter) all through the run
#   ARCUS=PATH                                     the arcus binary (default .build/debug/arcus;
#                                                  with --vm .build/release/arcus: TCG is slow)
#   ARCUS_NETWORK_VM_CPUS=N                        with --vm, the guest's virtual CPUs (default 1)
#
# The last line is `N passed, M failed`; a failed run keeps its history, the hosts' final states
# and every agent's log, and says where.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --vm ]; then
    # Debian's stock kernel in qemu (TCG) with virtme-ng, as Tools/test-power.sh boots it; the guest
    # (Tools/network-vm/guest.sh) runs this script with the other options. Agents are several
    # times slower under TCG: convergence gets a longer wait unless one is given.
    shift
    vm_packages=()
    source Tools/vm-kernel.sh
    work="$vm/network"
    mkdir -p "$work"
    exec 9> "$work/lock"
    flock -n 9 || fail "another Tools/test-network.sh --vm run uses $work"
    out="$work/out"
    rm -rf "$out" && mkdir -p "$out"
    # A private copy: the build folder may be rebuilt while the VM runs.
    source_binary="${ARCUS:-$root/.build/release/arcus}"
    [ -x "$source_binary" ] || fail "no $source_binary: swift build -c release --product arcus first (or ARCUS=PATH)"
    cp "$source_binary" "$work/arcus.new" && mv "$work/arcus.new" "$work/arcus"
    # And of Tools/ as it is now: bash reads a script as it runs it, and an edit to this one while
    # the VM ran made the guest run the bed a second time.
    rm -rf "$work/tools" && mkdir -p "$work/tools" && cp -r Tools "$work/tools/"
    args=("$@")
    [[ " ${args[*]} " == *" --converge-timeout "* ]] || args+=(--converge-timeout 600)
    echo "== booting Debian's kernel $version in qemu (TCG) for the network test bed: ${args[*]}"
    started=$(date +%s)
    PATH="$vm/venv/bin:$PATH" timeout "${ARCUS_NETWORK_VM_TIMEOUT:-2400}" vng --run "$vm/kernel/boot/vmlinuz-$version" \
        --disable-kvm --cpus "${ARCUS_NETWORK_VM_CPUS:-1}" --memory 2G --rwdir "$out" \
        -e "$work/tools/Tools/network-vm/guest.sh $work/arcus $out $(printf '%q ' "${args[@]}")" > "$work/console.log" 2>&1 &
    runner=$!
    touch "$out/run.log"
    tail -n +1 -f --pid "$runner" "$out/run.log" &
    set +e
    wait "$runner"
    status=$?
    wait
    set -e
    echo "== VM run: $(( $(date +%s) - started )) s, qemu status $status (console: $work/console.log)"
    [ -f "$out/status" ] || fail "the VM did not finish the run (status $status): see $work/console.log and $out/run.log"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out/run.log" | tail -1)
    [ -n "$summary" ] || fail "the bed in the VM gave no summary: see $out/run.log"
    echo "$summary"
    exit "$(cat "$out/status")"
fi

[ "$(id -u)" -eq 0 ] || { echo "error: the network test bed makes namespaces and nftables rules: run it as root" >&2; exit 1; }
for tool in ip nft tc nsenter unshare avahi-daemon dbus-daemon python3; do
    command -v "$tool" >/dev/null || { echo "error: $tool is missing: run Tools/install-deps.sh" >&2; exit 1; }
done
command -v cc >/dev/null || command -v gcc >/dev/null || command -v clang >/dev/null || {
    echo "error: no C compiler (cc, gcc, or the Swift toolchain's clang on PATH) to build the clock fault's Tools/network/wallclock.c" >&2; exit 1; }
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
