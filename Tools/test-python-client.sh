#!/usr/bin/env bash
# The Python client (Clients/python): installs it with pip into a fresh venv, as a user would, and
# runs its tests there against real `arcus agent` processes (no mock). The tests import the
# installed package, not the source tree, so a packaging mistake fails here too.
#
#   Tools/test-python-client.sh            after `swift build` (uses .build/debug/arcus)
#   ARCUS_BIN=/path/to/arcus Tools/test-python-client.sh
#   PYTHON=python3.12 Tools/test-python-client.sh
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")/.."
root="$PWD"

export ARCUS_BIN="${ARCUS_BIN:-$root/.build/debug/arcus}"
# A build under way may be replacing the binary: wait a minute for it before giving up.
for _ in $(seq 60); do [ -x "$ARCUS_BIN" ] && break; sleep 1; done
if [ ! -x "$ARCUS_BIN" ]; then
    echo "no arcus binary at $ARCUS_BIN: run swift build first, or set ARCUS_BIN" >&2
    exit 1
fi

work="$(mktemp -d /tmp/arcus-python-client.XXXXXX)"
# setuptools builds in the source tree (build/, src/*.egg-info): removed before, so that no module
# left from an earlier build is installed, and after, so that the tree is left as it was.
tidy() { rm -rf "$root/Clients/python/build" "$root"/Clients/python/src/*.egg-info; }
trap 'tidy; rm -rf "$work"' EXIT
tidy

"${PYTHON:-python3}" -m venv "$work/venv"
# pip fetches setuptools for the build (build isolation); the package itself needs nothing else.
"$work/venv/bin/pip" install --quiet --disable-pip-version-check ./Clients/python

# From the tests' own directory, so that `import arcus_client` can only be the installed one.
cd "$root/Clients/python/tests"
"$work/venv/bin/python" -X dev -m unittest discover --start-directory . --top-level-directory . -v
