#!/usr/bin/env bash
# Installs the test-only reference implementations (npm packages pinned by
# tests/node/package-lock.json, e.g. tiktoken for the tokenizer's differential test) into
# tests/node/node_modules. Needs node and npm (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/../tests/node"
if ! command -v npm >/dev/null 2>&1; then
  echo "install-test-deps: npm is missing; run scripts/install-deps.sh first" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
