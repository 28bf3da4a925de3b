#!/usr/bin/env bash
# Builds a release arcus for a Raspberry Pi from an x86_64 machine, with a Swift SDK for the
# target (Hardware/CrossBuilding.md says how to make one), and checks what came out.
#
#   Tools/cross-build.sh aarch64     Raspberry Pi OS / Debian bookworm, 64-bit (Pi 3, 4, 5, Zero 2 W)
#   Tools/cross-build.sh armv7       32-bit Raspberry Pi OS (needs a community armv7 toolchain)
#
# The SDK is looked up among `swift sdk list` by ARCUS_SWIFT_SDK, or by the target triple.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
    aarch64) triple="aarch64-unknown-linux-gnu"; machine="AArch64" ;;
    armv7) triple="armv7-unknown-linux-gnueabihf"; machine="ARM" ;;
    *) echo "usage: Tools/cross-build.sh aarch64|armv7" >&2; exit 2 ;;
esac

sdk="${ARCUS_SWIFT_SDK:-}"
if [ -z "$sdk" ]; then
    sdk="$(swift sdk list 2>/dev/null | grep -F "$triple" | head -n 1 || true)"
fi
if [ -z "$sdk" ]; then
    echo "error: no Swift SDK for $triple is installed (swift sdk list shows none)." >&2
    echo "       Make one with swift-sdk-generator from a Debian bookworm $1 sysroot that holds" >&2
    echo "       Arcus's -dev packages, install it with 'swift sdk install', and run this again;" >&2
    echo "       or build on the Pi itself. Both are in Hardware/CrossBuilding.md." >&2
    exit 1
fi

echo "== building arcus for $triple with the SDK $sdk"
swift build -c release --product arcus --swift-sdk "$sdk"
binary="$(swift build -c release --product arcus --swift-sdk "$sdk" --show-bin-path)/arcus"
file "$binary" | grep -q "$machine" || { echo "error: $binary is not an $machine binary: $(file "$binary")" >&2; exit 1; }
stripped="${binary}-stripped"
"${STRIP:-llvm-strip}" -o "$stripped" "$binary" 2>/dev/null || cp "$binary" "$stripped"
echo "built $binary ($(stat -c %s "$binary") bytes; stripped: $stripped, $(stat -c %s "$stripped") bytes)"
echo "copy it to the Pi: scp $stripped pi@HOST:/usr/local/bin/arcus (Hardware/Deploying.md)"
