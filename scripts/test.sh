#!/usr/bin/env bash
# Builds k3 (Release) into build/ and runs the whole test suite.
#   scripts/test.sh                 configure, build everything, ctest
#   BUILD_DIR=... CMAKE_ARGS=... scripts/test.sh   another build dir / extra cmake options
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-2}
# shellcheck disable=SC2086  # CMAKE_ARGS is a list of options
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
