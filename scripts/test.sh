#!/usr/bin/env bash
# The second set-up command: installs the dependencies (Debian packages, and the npm test
# oracles pinned in tests/node), builds k3 (Release) into build/ and runs the whole test suite.
#   scripts/test.sh                 configure, build everything, ctest
#   BUILD_DIR=... CMAKE_ARGS=... scripts/test.sh   another build dir / extra cmake options
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/install-deps.sh; else sudo -n scripts/install-deps.sh; fi
scripts/install-test-deps.sh
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-2}
# shellcheck disable=SC2086  # CMAKE_ARGS is a list of options
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
