#!/usr/bin/env bash
# Runs inside the VM that Tools/test-bluetooth.sh boots: loads the kernel's Bluetooth modules,
# makes two virtual LE controllers (BlueZ's btvirt), powers them, and runs the test suites that
# need real controllers. Lines starting with [vm] go back to the host's output; the last result
# is written to OUT/summary as `N passed, M failed`.
#
#   guest.sh TESTS OUT [ONLY [ARCUS]]   TESTS: the ArcusPackageTests.xctest built on the host;
#                                       ONLY: of the agent tests, only those whose name matches (a
#                                       regex); ARCUS: an arcus binary, to run the Bluetooth bench
#                                       beside l2test instead of the suites
tests="$1"
out="$2"
only="${3:-}"
arcus="${4:-}"
export ARCUS_BT_LOGS="$out/agents"
# BlueZ's emulator as Tools/test-bluetooth.sh built it (Debian's misroutes a controller's second link)
export ARCUS_BT_BTVIRT="$(dirname "$out")/btvirt"
# The host's own limit on open files (the tests open hundreds of links at once), not the guest's
# default of 1024; a crash prints raw addresses (symbolicating under TCG takes many minutes):
# llvm-symbolizer on the host names them.
ulimit -n "${ARCUS_BT_NOFILE:-$(cat "$out/../nofile" 2>/dev/null || echo 65536)}"
export SWIFT_BACKTRACE=enable=yes,interactive=no,symbolicate=off,threads=crashed,registers=none,images=mentioned
passed=0
failed=0
say() { echo "[vm] $*"; }
result() {
    if [ "$1" = 0 ]; then passed=$((passed + 1)); say "PASS: $2"; else failed=$((failed + 1)); say "FAIL: $2"; fi
}
finish() {
    echo "$passed passed, $failed failed" > "$out/summary"
    exit 0
}

modprobe bluetooth enable_ecred=1 && modprobe hci_vhci
result $? "kernel $(uname -r): bluetooth and hci_vhci loaded"
[ -e /dev/vhci ] || finish

# Scratch space (agents' data directories, the bed's run directory) on a tmpfs over /tmp.
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/Tools/vm-guest-tmp.sh"
private_tmp "$repo"

# btvirt -l3: three controllers in one emulator process (only those reach each other). Kernel
# 6.1's hci_vhci can swallow btvirt's first HCI Reset and leave a controller stuck in setup: wait
# for all on the management socket, and start btvirt again if they do not come.
want=3
controllers=0
for attempt in 1 2 3 4 5 6; do
    "$ARCUS_BT_BTVIRT" -l$want > "$out/btvirt.log" 2>&1 &
    btvirt=$!
    for _ in $(seq 40); do
        controllers=$(btmgmt info 2>/dev/null | grep -c '^hci[0-9]*:')
        [ "$controllers" = $want ] && break
        sleep 0.25
    done
    [ "$controllers" = $want ] && break
    say "btvirt attempt $attempt: $controllers controller(s) came up; starting it again"
    kill $btvirt; wait $btvirt 2>/dev/null
    for _ in $(seq 20); do [ -z "$(ls /sys/class/bluetooth 2>/dev/null)" ] && break; sleep 0.5; done
done
result $([ "$controllers" = $want ]; echo $?) "btvirt: $want virtual LE controllers on the management socket"
[ "$controllers" = $want ] || finish
indices=$(btmgmt info | sed -n 's/^hci\([0-9]*\):.*/\1/p' | sort -n | tr '\n' ' ')
addresses=""
ok=0
for index in $indices; do
    addresses="$addresses,$(btmgmt --index "$index" info | awk '/addr/{print $2; exit}')"
    btmgmt --index "$index" power on >/dev/null && btmgmt --index "$index" le on >/dev/null || ok=1
done
addresses=${addresses#,}
export ARCUS_BT_ADAPTERS="$addresses" ARCUS_BT_INDICES=$(echo $indices | tr ' ' ',')
set -- $indices
server_index=$1
result $ok "controllers hci${ARCUS_BT_INDICES//,/, hci} ($addresses) powered with LE on"

btmon -w "$out/btmon.btsnoop" > /dev/null 2>&1 &
monitor=$!

# One suite: every test line goes to OUT/SUITE[-LABEL].log, failures and figures to the host.
run_suite() {
    local suite=$1 label=${2:-} filter=$1
    [ -n "$only" ] && [ "$suite" != BluetoothLinkConformanceTests ] && filter="$suite/.*($only)"
    local log="$out/$suite${label:+-$label}.log"
    timeout 900 "$tests" --testing-library swift-testing --filter "$filter" > "$log" 2>&1
    local status=$?
    # ONLY names tests of other suites: this one has nothing to run, which is no failure.
    if [ -n "$only" ] && grep -q 'Test run with 0 tests' "$log"; then say "SKIP: $suite${label:+ ($label)}: no test matches '$only'"; return; fi
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '✘|Expectation failed|recorded an issue|^kernel-ble' | head -30 | cut -c1-600 | sed 's/^/[vm]   /'
    local summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'Test run with' | tail -1)
    result $status "$suite${label:+ ($label)}: ${summary:-no summary (status $status)}"
}

# The bench: what l2test moves from the first controller to the second over an LE credit-based
# channel (247-byte SDUs, as Arcus sends them), then `arcus bench ble` on the same pair and in the
# same direction; its goodput_ratio is Arcus's sync bytes per second over l2test's rate.
if [ -n "$arcus" ]; then
    set -- $indices
    source_address=$(btmgmt --index "$1" info | awk '/addr/{print $2; exit}')
    follower_address=$(btmgmt --index "$2" info | awk '/addr/{print $2; exit}')
    psm=145  # l2test takes the PSM in decimal; any free one in the LE dynamic range
    # l2test's receiver does not advertise: its controller does, connectable, meanwhile (the
    # Advertising setting hides Add Advertising instances: off again before the agents start).
    btmgmt --index "$2" connectable on >/dev/null && btmgmt --index "$2" advertising on >/dev/null
    l2test -r -V le_public -i "$follower_address" -P $psm -I 247 -b $((247 * 200)) > "$out/l2test-receiver.log" 2>&1 &
    receiver=$!
    sleep 1
    timeout 300 l2test -s -V le_public -i "$source_address" -P $psm -O 247 -b 247 -N "${ARCUS_BT_L2TEST_SDUS:-8000}" "$follower_address" > "$out/l2test-sender.log" 2>&1
    result $? "l2test sent ${ARCUS_BT_L2TEST_SDUS:-8000} SDUs of 247 bytes from hci$1 to hci$2"
    sleep 2
    kill $receiver 2>/dev/null
    # Each receiver line is one batch of 200 SDUs: "49400 bytes in 0.33 sec, 146.12 kB/s"; the
    # first waited for the connection, so it does not count.
    rate=$(awk '/ bytes in / { n++; if (n > 1) { bytes += $(NF-6); seconds += $(NF-3) } } END { if (seconds > 0) printf "%.0f", bytes / seconds }' "$out/l2test-receiver.log")
    result $([ -n "$rate" ]; echo $?) "l2test's rate from hci$1 to hci$2: ${rate:-none} bytes/s"
    btmgmt --index "$2" advertising off >/dev/null
    sleep 3  # the controllers drop the idle LE connection
    timeout 1200 "$arcus" bench ble --adapter "hci$1,hci$2" --docs "${ARCUS_BT_BENCH_DOCS:-10000}" ${rate:+--l2test-bytes-per-s $rate} --quiet \
        > "$out/bench.json" 2> "$out/bench.err"
    result $? "arcus bench ble --adapter hci$1,hci$2: $(cat "$out/bench.json" | tail -1)"
    sed 's/^/[vm]   /' "$out/bench.err" | tail -5
    kill $monitor 2>/dev/null
    finish
fi

# Each controller powered off and on: the links a suite left are dropped, so that the next
# starts afresh.
fresh_controllers() {
    for index in $indices; do
        btmgmt --index "$index" power off >/dev/null && btmgmt --index "$index" power on >/dev/null || say "could not power-cycle hci$index"
    done
}

# The channel itself: the first controller advertises connectable (the Advertising setting,
# which also hides Add Advertising instances: off again before the agents advertise their own).
btmgmt --index "$server_index" connectable on >/dev/null && btmgmt --index "$server_index" advertising on >/dev/null
run_suite BluetoothLinkConformanceTests
btmgmt --index "$server_index" advertising off >/dev/null

# The transport itself, each on its own controller, advertising and discovering as agents do.
run_suite KernelTransportConformanceTests
fresh_controllers

# Agents, each on its own controller: without bluetoothd, then with it owning the controllers.
# The bulk in the test pass is 2,000 documents (ARCUS_BT_BULK): the pass checks that a bulk
# catches up; its speed is the bench's (Tools/test-bluetooth.sh --bench, 10,000 documents). On
# a busy CI machine 10,000 took 442 s of the 1200 the whole VM run may take (2026-12-02).
ARCUS_BT_BULK=${ARCUS_BT_BULK:-2000} run_suite KernelBluetoothAgentTests no-bluetoothd
fresh_controllers
mkdir -p /run/dbus
dbus-daemon --system --fork > /dev/null 2>&1
/usr/libexec/bluetooth/bluetoothd -n > "$out/bluetoothd.log" 2>&1 &
bluetoothd=$!
for _ in $(seq 40); do [ "$(timeout 5 bluetoothctl list 2>/dev/null | grep -c Controller)" = $want ] && break; sleep 0.25; done
result $([ "$(timeout 5 bluetoothctl list 2>/dev/null | grep -c Controller)" = $want ]; echo $?) "bluetoothd $(bluetoothd -v) owns the $want controllers (bluetoothctl list)"
ARCUS_BT_BLUETOOTHD=1 ARCUS_BT_BULK=${ARCUS_BT_BULK_BLUETOOTHD:-2000} run_suite KernelBluetoothAgentTests bluetoothd
kill $bluetoothd 2>/dev/null

kill $monitor 2>/dev/null
sleep 0.5
btmon -r "$out/btmon.btsnoop" > "$out/btmon.txt" 2>&1
# The first channel set up in the capture is Arcus's own (the link suite opens it as the
# transport does): it asks for the MTU Docs/Transports.md gives, 247; MPS and credits are the kernel's.
request=$(grep -m1 -A6 'LE Connection Request' "$out/btmon.txt" | grep -E 'PSM|MTU|MPS|Credits' | tr -s ' ' | tr '\n' ' ')
result $(echo "$request" | grep -q 'MTU: 247 '; echo $?) "btmon: Arcus's LE credit-based connection request asks MTU 247:${request:- none captured}"
finish
