# Sourced by the scripts that boot Debian's stock kernel in qemu with virtme-ng (Tools/test-bluetooth.sh,
# Tools/test-power.sh), from the checkout's top: installs what a VM needs, unpacks the kernel (not
# installed) and virtme-ng. Expects `vm_packages` (Debian packages the caller needs besides qemu);
# sets `root`, `vm` (where the kernel and virtme-ng go; ARCUS_BT_VM_DIR), `version`, and `fail`,
# which prints the reason and a failed count and exits: a machine that cannot boot the VM fails.
root="$PWD"
vm="${ARCUS_BT_VM_DIR:-$root/.build/bt-vm}"
mkdir -p "$vm"
fail() { echo "error: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# qemu (TCG: this machine's /dev/kvm, where there is one, may not run a stock kernel), busybox for
# virtme-ng's initramfs, kmod for the modules.
need=""
for package in qemu-system-x86 kmod busybox-static curl xz-utils "${vm_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' || need="$need $package"
done
if [ -n "$need" ]; then
    echo "== installing$need"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $need >/dev/null \
        || fail "could not install$need (apt-get): the VM pass needs them"
fi
package="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')"
[ -n "$package" ] || { apt-get update -q >/dev/null; package="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')"; }
[ -n "$package" ] || fail "apt knows no linux-image-amd64: the VM needs Debian's stock kernel (its -cloud flavour has no Bluetooth)"
version="${package#linux-image-}"
if [ ! -e "$vm/kernel/boot/vmlinuz-$version" ]; then
    echo "== unpacking $package"
    rm -rf "$vm/debs" "$vm/kernel" && mkdir -p "$vm/debs" "$vm/kernel"
    (cd "$vm/debs" && apt-get download "$package" >/dev/null) || fail "could not download $package"
    dpkg-deb -x "$vm"/debs/"$package"_*.deb "$vm/kernel"
    depmod -b "$vm/kernel" "$version"
fi
mkdir -p /lib/modules
[ -e "/lib/modules/$version" ] || ln -sfn "$vm/kernel/lib/modules/$version" "/lib/modules/$version"
if [ ! -x "$vm/venv/bin/vng" ]; then
    echo "== installing virtme-ng"
    python3 -m venv "$vm/venv" && "$vm/venv/bin/pip" install -q 'virtme-ng==1.42' || fail "could not install virtme-ng from PyPI"
fi
