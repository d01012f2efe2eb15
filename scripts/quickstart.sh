#!/usr/bin/env bash
# The first set-up command: installs k3's dependencies, builds k3, writes a small
# random-initialised Kimi-K3 model with `k3 mock`, and answers a chat prompt with it.
# (A random model answers with random text: this shows the whole path works, not the model.)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/install-deps.sh; else sudo -n scripts/install-deps.sh; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "${JOBS:-2}" --target k3
mkdir -p models
model=models/mock-tiny.gguf
[ -f "$model" ] || build/k3 mock --preset tiny --seed 1 -o "$model"
build/k3 info "$model"
build/k3 run -m "$model" --no-thinking -p "Hello! What can you do?" -n 48 --seed 1
