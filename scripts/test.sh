#!/usr/bin/env bash
# The whole test suite: typecheck, build, unit + model-backed tests, and the real-editor test
# (code-server + chromium, installed by scripts/setup-e2e.sh when missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup-e2e.sh
npx tsc -p tsconfig.json
node esbuild.mjs
node --import tsx --test --test-concurrency=1 --test-timeout=900000 \
  test/unit/*.test.ts test/e2e/*.test.ts
