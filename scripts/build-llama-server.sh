#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the source node-llama-cpp ships (llama/gitRelease.bundle),
# into bench/cache/llama-server (cached; ~30 min on 2 cores). `npm run bench` uses it when present:
# speculative decoding with -md and /infill, the way llama.vscode users run it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=bench/cache/llama-server
BIN=$DIR/build/bin/llama-server
if [ -x "$BIN" ]; then echo "llama-server already built: $BIN"; exit 0; fi
mkdir -p "$DIR"
if [ ! -d "$DIR/src/.git" ]; then
  rm -rf "$DIR/src"
  git clone -q node_modules/node-llama-cpp/llama/gitRelease.bundle "$DIR/src"
fi
cmake -S "$DIR/src" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
cmake --build "$DIR/build" --target llama-server -j "$(nproc)"
echo "built $BIN"
