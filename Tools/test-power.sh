#!/usr/bin/env bash
# Power cuts: an agent in a VM (Debian's kernel in qemu, as Tools/test-bluetooth.sh boots it)
# keeps its data directory on a virtual disk (ext4 on virtio-blk, the host's cache off), writes
# through its HTTP API, and the VM is killed at a random moment (qemu SIGKILL: what the guest
# had not fsynced is gone, as in a power cut). Each boot then checks what the one before left:
# SQLite's integrity check, every write acknowledged before the cut present, the agent starting
# and syncing all it holds to a second agent. The host records an acknowledgement only once the
# guest printed it, after the API answered.
#
#   Tools/test-power.sh                       20 cuts, durability full (the agent's default)
#   ARCUS_POWER_CUTS=N ARCUS_POWER_DURABILITY=normal Tools/test-power.sh
#   ARCUS_POWER_SEED=S                        replays the moments of the cuts
#   ARCUS=PATH                                the arcus binary (default .build/debug/arcus)
#
# Its last line is `N passed, M failed`: per boot, the disk mounts, the integrity check is ok,
# no acknowledged write is missing, the agent starts and a second agent syncs all it holds.
set -euo pipefail
cd "$(dirname "$0")/.."
vm_packages=(e2fsprogs)
source Tools/vm-kernel.sh

arcus="$(realpath "${ARCUS:-$root/.build/debug/arcus}")"
[ -x "$arcus" ] || fail "no $arcus: swift build first (or ARCUS=PATH)"
cuts="${ARCUS_POWER_CUTS:-20}"
durability="${ARCUS_POWER_DURABILITY:-full}"
seed="${ARCUS_POWER_SEED:-$RANDOM}"
echo "== $cuts power cuts under durability $durability, seed $seed (replay: ARCUS_POWER_SEED=$seed)"

work="$vm/power"
out="$work/out"
rm -rf "$work" && mkdir -p "$out"
disk="$work/disk.img"
truncate -s 256M "$disk"
mkfs.ext4 -q -F "$disk"
"$arcus" mesh secret "$out/mesh.secret" >/dev/null 2>&1
echo "{\"mesh_secret_file\": \"$out/mesh.secret\"}" > "$out/agent.json"
: > "$work/acked"

passed=0
failed=0
check() {  # check OK NAME
    if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2"; fi
}
RANDOM=$seed
lost_total=0
set +e  # each check below counts a failure and goes on
for boot in $(seq 0 "$cuts"); do
    console="$out/console-$boot.log"
    started=$(date +%s)
    PATH="$vm/venv/bin:$PATH" timeout 900 vng --run "$vm/kernel/boot/vmlinuz-$version" --disable-kvm --cpus 1 --memory 1G \
        --disable-microvm --rwdir "$out" --qemu-opts="-drive file=$disk,if=virtio,format=raw,cache=none" \
        -e "$root/Tools/power-vm/guest.sh $arcus $out $boot $durability" > "$console" 2>&1 &
    runner=$!
    # Until the guest writes (or gives up), then a random moment into the writes.
    for _ in $(seq 1 1800); do
        grep -q '^\[vm\] writing' "$console" && break
        grep -q '^\[vm\] FAIL' "$console" && break
        kill -0 "$runner" 2>/dev/null || break
        sleep 0.5
    done
    if grep -q '^\[vm\] writing' "$console" && [ "$boot" -lt "$cuts" ]; then
        for _ in $(seq 1 120); do grep -q '^\[ack\]' "$console" && break; sleep 0.5; done
        sleep "$((RANDOM % 5 + 1)).$((RANDOM % 10))"
    fi
    pkill -9 -f "qemu-system.*$disk" 2>/dev/null || true
    wait "$runner" 2>/dev/null || true

    # What the boot before left, as this boot found it.
    if [ "$boot" -gt 0 ]; then
        integrity=$(sed -n 's/^\[vm\] integrity //p' "$console" | tr -d '\r')
        check "$([ "$integrity" = ok ] && echo 0 || echo 1)" "boot $boot: integrity_check says '${integrity:-nothing}'"
    fi
    grep -q '^\[vm\] agent started' "$console"
    check $? "boot $boot: the agent started (console: $console)"
    if [ -s "$out/held-$boot.json" ]; then
        missing=$(python3 - "$work/acked" "$out/held-$boot.json" <<'PY'
import json, sys
acked = [l.strip() for l in open(sys.argv[1]) if l.strip()]
held = {item["_id"] for item in json.load(open(sys.argv[2]))["items"]}
lost = [a for a in acked if a not in held]
print(len(lost), " ".join(lost[:10]))
PY
)
    else
        missing="$(wc -l < "$work/acked") (nothing read)"
    fi
    lost=${missing%% *}
    lost_total=$lost  # of every write acknowledged so far, missing now
    check "$([ "$lost" = 0 ] && echo 0 || echo 1)" "boot $boot: acknowledged writes missing: $missing"
    synced=$(sed -n 's/^\[vm\] synced //p' "$console" | tr -d '\r')
    check "$(echo "$synced" | awk '{exit !($1 == $3 && $1 > 0 || $3 == 0)}' && echo 0 || echo 1)" "boot $boot: the second agent synced ${synced:-nothing}"
    acks=$(grep -c '^\[ack\]' "$console" || true)
    grep '^\[ack\]' "$console" | sed 's/^\[ack\] //' | tr -d '\r' >> "$work/acked"
    echo "boot $boot: $(( $(date +%s) - started )) s, integrity ${integrity:--}, held $(sed -n 's/^\[vm\] held //p' "$console" | tr -d '\r'), synced ${synced:--}, lost $lost, then $acks writes acknowledged before the cut"
done
echo "power cuts: $cuts, durability $durability, acknowledged writes checked $(wc -l < "$work/acked"), lost $lost_total"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
