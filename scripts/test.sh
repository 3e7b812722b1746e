#!/usr/bin/env bash
# The whole test suite: typecheck, lint, build, then the tests in tiers, and the contract tests against a
# real llama-server and the real-editor tests (code-server + chromium, installed by scripts/setup-e2e.sh
# when missing):
#   test/unit         pure: no model, no process, no server; two files at a time (under a minute)
#   test/model        real GGUF models in this process; two files at a time (each computes on one thread)
#   test/integration  processes, servers, packaging, threadpools, the software GPU; one at a time
#   test/e2e          a real VS Code in chromium; one at a time
# The bench's own tests (bench/test/unit, bench/test/model) run in the unit and model tiers. What tests and
# bench both use (GGUF writer, vocabularies, next-edit cases, llama-server, the editor harness) is testbed/.
#
# llama-server is built once from the llama.cpp source node-llama-cpp ships (scripts/build-llama-server.sh):
# niced, in the background while the tiers run, and kept per machine (DRAFTLINE_MACHINE_CACHE below).
# DRAFTLINE_SKIP_LLAMA_SERVER=1 skips the build, and the tests that need the server say they were skipped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p test-output
# What a run builds or installs outside npm (llama-server, code-server) is kept per machine, not per
# checkout: a fresh clone on the same machine (CI) reuses it. Empty: everything in the checkout.
export DRAFTLINE_MACHINE_CACHE="${DRAFTLINE_MACHINE_CACHE-${HOME:+$HOME/.cache/draftline}}"
BUILD_PID=
if [ "${DRAFTLINE_SKIP_LLAMA_SERVER:-}" != 1 ]; then
  nice -n 19 bash scripts/build-llama-server.sh >test-output/llama-server-build.log 2>&1 &
  BUILD_PID=$!
  export DRAFTLINE_REQUIRE_LLAMA_SERVER=1
fi
# The Debian packages now (the integration tier's software GPU needs them); code-server, which only
# test/e2e needs, meanwhile: on a fresh machine its install builds native modules for minutes.
bash scripts/setup-e2e.sh system
nice -n 10 bash scripts/setup-e2e.sh code-server >test-output/code-server-install.log 2>&1 &
CODE_SERVER_PID=$!
# The native greedy reader must build here (Linux, g++): its tests compare it with node-llama-cpp's sampler.
export DRAFTLINE_REQUIRE_NATIVE=1
# The GPU path runs on llvmpipe (mesa-vulkan-drivers, installed by setup-e2e.sh): test/integration/vulkan.test.ts.
export DRAFTLINE_REQUIRE_VULKAN=1
npx tsc -p tsconfig.json
npm run --silent lint
node esbuild.mjs
# The bench kit's test runs its lease with the llama-server built here where the kit would build its own.
NEEDS_SERVER=(test/integration/llamaServerContract.test.ts test/integration/benchKit.test.ts)
INTEGRATION=()
for f in test/integration/*.test.ts; do [[ " ${NEEDS_SERVER[*]} " == *" $f "* ]] || INTEGRATION+=("$f"); done
tier() {
  local name=$1 concurrency=$2 started=$SECONDS
  shift 2
  echo "== $name ($# files)"
  node --import tsx --test --test-concurrency="$concurrency" --test-timeout=900000 "$@"
  echo "== $name: $((SECONDS - started)) s"
}
tier unit 2 test/unit/*.test.ts bench/test/unit/*.test.ts
tier model 2 test/model/*.test.ts bench/test/model/*.test.ts
tier integration 1 "${INTEGRATION[@]}"
if [ -n "$BUILD_PID" ]; then
  echo "waiting for the llama-server build (log: test-output/llama-server-build.log)"
  if ! wait "$BUILD_PID"; then
    tail -40 test-output/llama-server-build.log
    echo "the llama-server build failed: the contract tests cannot run (DRAFTLINE_SKIP_LLAMA_SERVER=1 skips them)" >&2
    exit 1
  fi
fi
if ! wait "$CODE_SERVER_PID"; then
  tail -40 test-output/code-server-install.log
  echo "installing code-server failed: the e2e tests cannot run" >&2
  exit 1
fi
tier 'llama-server contract and e2e' 1 "${NEEDS_SERVER[@]}" test/e2e/*.test.ts
