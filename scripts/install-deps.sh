#!/usr/bin/env bash
# Installs everything k3 needs to build and test, from Debian's packages.
# Idempotent and non-interactive; run as root on Debian 12.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  clang libclang-rt-14-dev          # libFuzzer and the sanitizer runtimes
  libgtest-dev libgmock-dev
  nlohmann-json3-dev libcli11-dev libpcre2-dev libedit-dev liburing-dev
  libboost-dev
  openmpi-bin libopenmpi-dev        # parallel jobs across ranks (--parallel-mode tp)
  jq                                # bench/compare_llama_cpp.sh reads both engines' JSON
  nodejs                            # test-only oracles (tiktoken, openai client)
  chromium                          # test-only: the chat page in headless Chromium (playwright-core)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Some machines carry a Node.js build that bundles npm and conflicts with Debian's npm package.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
