#!/usr/bin/env bash
# Runs inside the VM that `Tools/test-network.sh --vm` boots (Debian's kernel, which has netem):
# loads the modules the test bed needs, gives it a /tmp of its own, and runs the very same bed
# (Tools/test-network.sh with the same options, from the copy of Tools/ the host made at the start). Its output goes to OUT/run.log (the VM's console
# drops the first lines); a failed run's directory (history, final states, agents' logs) is copied
# to OUT, and OUT/status holds the bed's exit status.
#
#   guest.sh ARCUS OUT [OPTIONS...]
arcus="$1"
out="$2"
shift 2
exec > "$out/run.log" 2>&1
echo "== in the VM: kernel $(uname -r), $(nproc) CPU(s), $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) MB"
# veth and the bridge for the hosts; nftables (bridge and netdev families, numgen, dup) for
# partitions, loss and duplication; tbf for the rate limit; netem for delay, jitter and reordering.
for module in veth bridge nf_tables nft_numgen nft_dup_netdev sch_tbf sch_netem; do
    modprobe "$module" || { echo "error: modprobe $module failed"; echo "0 passed, 1 failed"; echo 1 > "$out/status"; exit 0; }
done

# Scratch space (agents' data directories, the bed's run directory) on a tmpfs over /tmp.
repo=$(cd "$(dirname "$0")/../.." && pwd)  # the copy's top, which holds Tools/
source "$repo/Tools/vm-guest-tmp.sh"
private_tmp "$repo"
export PYTHONDONTWRITEBYTECODE=1
ip link set lo up

cd "$repo"
ARCUS="$arcus" ARCUS_NETWORK_VM=1 Tools/test-network.sh "$@"
status=$?
for kept in /tmp/arcus-network.*; do
    [ -d "$kept" ] || continue
    rm -f "$kept/arcus"
    cp -r "$kept" "$out/" 2>/dev/null; echo "== the run's directory is on the host in $out/$(basename "$kept")"
done
echo "$status" > "$out/status"
