#!/usr/bin/env bash
# Compiles ggml's CUDA backend, llama-server and llama-quantize for this machine's GPU only, from the
# llama.cpp source node-llama-cpp's binaries were built from (llama.cpp.tar.xz; same commit, so the
# library's prebuilt libggml-base.so takes the new libggml-cuda.so). Only the GPU's own architecture
# (compute capability from nvidia-smi, SASS only): the prebuilt all-architecture libggml-cuda.so is
# too big to carry. Needs cmake, a C++ compiler and the CUDA toolkit (nvcc) of the CUDA major
# node-llama-cpp links (13). CUDA_ARCHITECTURES=90 overrides the architecture read from nvidia-smi;
# DRAFTLINE_KIT_NO_SERVER=1 builds ggml-cuda alone (the bench then leaves llama-server's modes out).
# Exit 3: ggml-cuda is built but the built llama-server does not start; it is put aside
# (.llama-server-failed), so the bench runs on the GPU without llama-server's modes.
# Run by run.sh (once: a second call finds it built) and by run.sh lease (first, in the background).
set -euo pipefail
KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BINS="$KIT/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda"
SERVER_DIR="$KIT/bench/cache/llama-server/build"
NO_SERVER="${DRAFTLINE_KIT_NO_SERVER:-}"
server_runs() { "$SERVER_DIR/bin/llama-server" --version >/dev/null 2>&1; }
# Built once: a server that does not start is reported by the build that made it (below), not rebuilt
# by every later run.sh.
if [ -f "$BINS/libggml-cuda.so" ] && { [ -n "$NO_SERVER" ] || [ -x "$SERVER_DIR/bin/llama-server" ] || [ -f "$BINS/.llama-server-failed" ]; }; then echo "[build-cuda] already built"; exit 0; fi
STARTED=$(date +%s)
command -v cmake >/dev/null || { echo "[build-cuda] cmake is missing" >&2; exit 1; }
if ! command -v nvcc >/dev/null; then
  # The newest toolkit first (node-llama-cpp links CUDA 13).
  for d in /usr/local/cuda/bin $(ls -d /usr/local/cuda-*/bin 2>/dev/null | sort -rV); do if [ -x "$d/nvcc" ]; then export PATH="$d:$PATH"; break; fi; done
fi
command -v nvcc >/dev/null || { echo "[build-cuda] the CUDA toolkit (nvcc) is missing" >&2; exit 1; }
ARCH="${CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')}"
SRC="$KIT/.build/llama.cpp"
BUILD="$KIT/.build/cuda-$ARCH"
if [ ! -f "$SRC/CMakeLists.txt" ]; then mkdir -p "$KIT/.build" && tar -xJf "$KIT/llama.cpp.tar.xz" -C "$KIT/.build"; fi
TARGETS=(ggml-cuda)
[ -n "$NO_SERVER" ] || TARGETS+=(ggml-cpu llama-server llama-quantize)
echo "[build-cuda] ${TARGETS[*]} for sm_$ARCH with $(nvcc --version | tail -1)"
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
# GGML_BACKEND_DL: backends are modules loaded at run time, as in node-llama-cpp's own build (and
# GGML_NATIVE must be off with it). The CPU module is built for llama-server's own use.
# "-real": machine code for this GPU alone, no PTX for later ones (a kit is built where it runs).
cmake -S "$SRC" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${ARCH}-real" \
  -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$KIT/.build/cmake-$ARCH.log" ||
  { tail -40 "$KIT/.build/cmake-$ARCH.log" >&2; exit 1; }
cmake --build "$BUILD" --target "${TARGETS[@]}" -j "$(nproc)"
cp "$BUILD/bin/libggml-cuda.so" "$BINS/libggml-cuda.so"
ln -sf libggml-base.so "$BINS/libggml-base.so.0"
if [ -z "$NO_SERVER" ]; then
  mkdir -p "$SERVER_DIR"
  ln -sfn "$BUILD/bin" "$SERVER_DIR/bin"
  if ! server_runs; then
    echo "[build-cuda] ggml-cuda is built, but the built llama-server does not start (its modes are left out):" >&2
    "$SERVER_DIR/bin/llama-server" --version >&2 || true
    ldd "$SERVER_DIR/bin/llama-server" >&2 || true
    # Aside, not removed: llama-quantize beside it may still run (the Q8_0 target needs it).
    mv "$BUILD/bin/llama-server" "$BUILD/bin/llama-server.does-not-start"
    touch "$BINS/.llama-server-failed"
    exit 3
  fi
fi
echo "[build-cuda] built ${TARGETS[*]} for sm_$ARCH in $(($(date +%s) - STARTED)) s"
