# Sourced by the VM guests (Tools/bluetooth-vm/guest.sh, Tools/network-vm/guest.sh). The guest
# sees the host's files read-only, so scratch space goes on a tmpfs over /tmp. A checkout under
# /tmp (a CI clone, say) would vanish under it, and the binaries and results with it: the host's
# /tmp is kept aside first and the checkout bound back in place. Sets TMPDIR.
private_tmp() {
    local repo=$1
    case "$repo/" in
        /tmp/*)
            mkdir -p /run/arcus-host-tmp && mount --rbind /tmp /run/arcus-host-tmp
            mount -t tmpfs tmpfs /tmp
            mkdir -p "$repo" && mount --rbind "/run/arcus-host-tmp/${repo#/tmp/}" "$repo"
            ;;
        *) mount -t tmpfs tmpfs /tmp ;;
    esac
    export TMPDIR=/tmp
}
