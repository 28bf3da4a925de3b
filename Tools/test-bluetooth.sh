#!/usr/bin/env bash
# The Bluetooth tests on the Linux kernel's own stack: boots Debian's stock kernel (which has
# Bluetooth; this machine's may not) in qemu with virtme-ng, the host's root filesystem shared
# read-only so that the test binary built here runs inside, makes two virtual LE controllers with
# BlueZ's btvirt, and runs the suites that need real controllers against them.
#
#   Tools/test-bluetooth.sh            build the tests if needed, install what is missing, boot, run
#   Tools/test-bluetooth.sh ONLY       of the agent tests, only those whose name matches ONLY (a regex)
#   Tools/test-bluetooth.sh --bench    instead of the tests: l2test's rate between two virtual
#                                      controllers, then `arcus bench ble` (release) on the same pair
#   ARCUS_BT_VM_DIR=DIR                where the kernel and virtme-ng go (default .build/bt-vm)
#   ARCUS_BT_CPUS=N                    the guest's virtual CPUs (default 1: TCG on two host cores)
#
# Its last line is `N passed, M failed` (suites run in the VM). A machine that cannot boot the VM
# fails the pass with the reason; it never skips silently. No network in the guest (only lo).
set -euo pipefail
cd "$(dirname "$0")/.."

# 1. What the VM needs (Tools/vm-kernel.sh): qemu, the kernel, virtme-ng; and BlueZ's emulator
#    and tools, and cc for btvirt.
vm_packages=(bluez bluez-test-tools gcc)
source Tools/vm-kernel.sh

# BlueZ 5.66's btvirt forwards ACL data under the sender's connection handle and tells the
# peripheral the central's handle; both ends count from 42, so it shows only once a controller
# holds two links (three agents): data for one link arrives on another. Fixed upstream by
# 4ff7deaf8c ("emulator: use the handle of the receiving side", after 5.82); Debian's package
# has it not. The VM uses an emulator built here from the same release with our patch to the same
# effect (Tools/bluetooth-vm/btvirt-receiving-side-handle.patch): a few seconds with cc.
patch="$root/Tools/bluetooth-vm/btvirt-receiving-side-handle.patch"
stamp="bluez-5.66+$(sha256sum "$patch" | cut -c1-16)"
if [ "$(cat "$vm/btvirt.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -x "$vm/btvirt" ]; then
    echo "== building BlueZ 5.66's btvirt with the receiving side's handle"
    tarball="$vm/bluez_5.66.orig.tar.xz"
    sha=a231fb9d151780edf6d2536c81914e2dbd3daa36b68f486badaf98a7f34021e4
    if ! echo "$sha  $tarball" | sha256sum -c --status 2>/dev/null; then
        curl -fsSL --retry 3 -o "$tarball" http://deb.debian.org/debian/pool/main/b/bluez/bluez_5.66.orig.tar.xz \
            && echo "$sha  $tarball" | sha256sum -c --status || rm -f "$tarball"
    fi
    [ -f "$tarball" ] || fail "could not download BlueZ 5.66's source from deb.debian.org (or its checksum differs) to build btvirt"
    source="$vm/bluez-src"
    rm -rf "$source" && mkdir -p "$source" && tar xf "$tarball" -C "$source" --strip-components=1
    (cd "$source" && patch -p1 -s < "$patch") || fail "$patch does not apply to BlueZ 5.66"
    echo '#define VERSION "5.66"' > "$source/config.h"
    (cd "$source" && cc -O2 -w -DHAVE_CONFIG_H -I. -Ilib -o "$vm/btvirt" \
        emulator/main.c emulator/serial.c emulator/server.c emulator/vhci.c emulator/btdev.c \
        emulator/bthost.c emulator/smp.c emulator/phy.c emulator/amp.c emulator/le.c \
        lib/bluetooth.c lib/hci.c src/shared/queue.c src/shared/util.c src/shared/crypto.c \
        src/shared/ecc.c src/shared/io-mainloop.c src/shared/timeout-mainloop.c \
        src/shared/mainloop.c src/shared/mainloop-notify.c) || fail "could not build btvirt from BlueZ 5.66 (cc)"
    echo "$stamp" > "$vm/btvirt.stamp"
fi

# 2. The tests (or the bench), built here: the guest runs this machine's binaries.
only="${1:-}"
arcus=""
tests="$root/.build/debug/ArcusPackageTests.xctest"
if [ "$only" = --bench ]; then
    only=""
    echo "== building arcus (release) for the bench"
    swift build -c release --product arcus >/dev/null || fail "swift build -c release --product arcus failed"
    arcus="$root/.build/release/arcus"
elif [ ! -x "$tests" ] || [ -n "${ARCUS_BT_BUILD:-}" ]; then
    echo "== building the tests"
    swift build --build-tests >/dev/null
fi

# 3. Boot and run the guest's part; the results come back through a writable folder.
out="$vm/out"
rm -rf "$out" && mkdir -p "$out"
echo "${ARCUS_BT_NOFILE:-$(ulimit -n)}" > "$vm/nofile"  # the guest takes this machine's limit on open files
echo "== booting Debian's kernel $version in qemu (TCG) with three virtual controllers"
started=$(date +%s)
# 30 minutes for the whole guest (ARCUS_BT_VM_SECONDS): about 12 on an idle machine, but a busy
# CI machine took 20 for the first half of the agents' suite alone (2026-12-02).
set +e
PATH="$vm/venv/bin:$PATH" timeout "${ARCUS_BT_VM_SECONDS:-1800}" vng --run "$vm/kernel/boot/vmlinuz-$version" --disable-kvm --cpus "${ARCUS_BT_CPUS:-1}" --memory 2G \
    --rwdir "$out" -e "$root/Tools/bluetooth-vm/guest.sh $tests $out '$only' '$arcus'" > "$out/console.log" 2>&1
status=$?
set -e
grep -E '^\[vm\]' "$out/console.log" | sed 's/^\[vm\] //' || true
echo "VM run: $(( $(date +%s) - started )) s, status $status (console: $out/console.log)"
if [ ! -f "$out/summary" ]; then
    tail -20 "$out/console.log" >&2
    fail "the VM did not report its results (status $status): see $out/console.log"
fi
# What Arcus asks of the channel, as the controller saw it (Docs/Transports.md says what it should be).
if [ -f "$out/btmon.txt" ]; then
    echo "btmon: the first LE credit-based connection request and its answer:"
    grep -m1 -B1 -A5 'LE Connection Request' "$out/btmon.txt" | sed 's/^/  /' || true
    grep -m1 -B1 -A5 'LE Connection Response' "$out/btmon.txt" | sed 's/^/  /' || true
fi
[ -f "$out/bench.json" ] && echo "bench: $(tail -1 "$out/bench.json")"
cat "$out/summary"
grep -q ' 0 failed$' "$out/summary"
