#!/usr/bin/env bash
# Runs Draftline's benchmark from this kit, with no network and no Node installed:
#   bash run.sh [bench args]            e.g. --gpu cuda --regimes 1,2 --regime2-targets v3,7b-qwen
#   bash run.sh profile [profile args]  the per-step profile (npm run bench:profile)
#   bash run.sh kv-branches [args]      the KV designs for token trees (npm run bench:kv-branches)
#   bash run.sh lease [--budget-s N] [--out DIR]   every GPU step of a lease, one command (lease.sh)
#   bash run.sh lease --prepare         the build and the random targets, detached (a first command)
#   bash run.sh server-check            llama-server starts and answers
# With --gpu cuda (the default where nvidia-smi sees a GPU) it first compiles ggml's CUDA backend
# and llama-server for this GPU (build-cuda.sh, once). Results: bench/results/ inside the kit.
set -euo pipefail
KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="$KIT/node/bin/node"
SCRIPT="$KIT/bench/run.js"
# The v3 pair: in the kit, else from draftline-bench-kit-models.tar.xz beside it (the archives travel
# apart: both would not fit in one upload of 64 MiB), else from a checkout of the repository
# (DRAFTLINE_KIT_MODELS=<checkout>/models, where a checkout reaches the machine anyway).
# (run.sh lease --prepare does without: it builds and writes the random targets.)
preparing=
[ "${1:-}" = lease ] && [[ " $* " == *" --prepare "* ]] && preparing=1
if [ -z "$preparing" ] && { [ ! -f "$KIT/models/draftline-code-target.gguf" ] || [ ! -f "$KIT/models/draftline-code-draft.gguf" ]; }; then
  if [ -f "$KIT/../draftline-bench-kit-models.tar.xz" ]; then
    tar -xJf "$KIT/../draftline-bench-kit-models.tar.xz" -C "$KIT/.."
  elif [ -n "${DRAFTLINE_KIT_MODELS:-}" ]; then
    mkdir -p "$KIT/models" && cp "$DRAFTLINE_KIT_MODELS/draftline-code-target.gguf" "$DRAFTLINE_KIT_MODELS/draftline-code-draft.gguf" "$KIT/models/"
  else
    echo "[kit] no v3 pair in models/: unpack draftline-bench-kit-models.tar.xz beside the kit, or set DRAFTLINE_KIT_MODELS=<repository>/models" >&2
    exit 1
  fi
fi
if [ "${1:-}" = lease ]; then shift; exec bash "$KIT/lease.sh" "$@"; fi
if [ "${1:-}" = profile ]; then SCRIPT="$KIT/bench/profile.js"; shift; fi
if [ "${1:-}" = kv-branches ]; then SCRIPT="$KIT/bench/kv-branches.js"; shift; fi
# run.sh server-check [--gpu cuda]: llama-server starts and answers (bench/serverCheck.ts).
if [ "${1:-}" = server-check ]; then SCRIPT="$KIT/bench/server-check.js"; shift; fi
args=("$@")
gpu=
for ((i = 0; i < ${#args[@]}; i++)); do [ "${args[$i]}" = --gpu ] && gpu="${args[$((i + 1))]:-}"; done
if [ -z "$gpu" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu=cuda
  args+=(--gpu cuda)
fi
# A kit made without the tiny pair (the default) runs the v3 pair where the bench would run both.
if [ ! -f "$KIT/models/tiny-code-target.gguf" ]; then
  has() { local a; for a in "${args[@]}"; do [ "$a" = "$1" ] && return 0; done; return 1; }
  if [ "$SCRIPT" = "$KIT/bench/profile.js" ]; then
    has --targets || args+=(--targets v3,qwen-vocab)
  elif [ "$SCRIPT" = "$KIT/bench/run.js" ]; then
    has --pairs || has --target || args+=(--pairs v3)
    has --regime2-targets || args+=(--regime2-targets v3,qwen-vocab)
  fi
fi
if [ "$gpu" = cuda ]; then
  bash "$KIT/build-cuda.sh"
  # The locally built libggml-cuda.so asks for libggml-base.so.0, which node-llama-cpp's folder holds
  # (build-cuda.sh links the name). For node only: the bench gives llama-server and llama-quantize
  # the path as it was (testbed/llamaServer.ts serverEnv), or they would load node-llama-cpp's prebuilt
  # libggml-base and libllama-common instead of their own.
  export DRAFTLINE_SERVER_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
  export LD_LIBRARY_PATH="$KIT/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
cd "$KIT"
echo "[kit] $(cat "$KIT/KIT.json" | tr -d '\n' | tr -s ' ')"
exec "$NODE" "$SCRIPT" "${args[@]}"
