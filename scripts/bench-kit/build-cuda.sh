#!/usr/bin/env bash
# Compiles ggml's CUDA backend and llama-server for this machine's GPU only, from the llama.cpp
# source node-llama-cpp's binaries were built from (llama.cpp.tar.xz; same commit, so the library's
# prebuilt libggml-base.so takes the new libggml-cuda.so). ~4 min on 16 cores for one architecture
# (sm_90: 68 MB, against 159 MB for the prebuilt all-architecture one the kit leaves out).
# Needs cmake, a C++ compiler and the CUDA toolkit (nvcc) of the CUDA major node-llama-cpp links (13).
# CUDA_ARCHITECTURES=90 overrides the architecture read from nvidia-smi. Run by run.sh; once.
set -euo pipefail
KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BINS="$KIT/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda"
SERVER_DIR="$KIT/bench/cache/llama-server/build"
if [ -f "$BINS/libggml-cuda.so" ] && [ -x "$SERVER_DIR/bin/llama-server" ]; then echo "[build-cuda] already built"; exit 0; fi
command -v cmake >/dev/null || { echo "[build-cuda] cmake is missing" >&2; exit 1; }
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do if [ -x "$d/nvcc" ]; then export PATH="$d:$PATH"; break; fi; done
fi
command -v nvcc >/dev/null || { echo "[build-cuda] the CUDA toolkit (nvcc) is missing" >&2; exit 1; }
ARCH="${CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')}"
SRC="$KIT/.build/llama.cpp"
BUILD="$KIT/.build/cuda-$ARCH"
if [ ! -f "$SRC/CMakeLists.txt" ]; then mkdir -p "$KIT/.build" && tar -xJf "$KIT/llama.cpp.tar.xz" -C "$KIT/.build"; fi
echo "[build-cuda] ggml-cuda and llama-server for sm_$ARCH with $(nvcc --version | tail -1)"
# GGML_BACKEND_DL: backends are modules loaded at run time, as in node-llama-cpp's own build (and
# GGML_NATIVE must be off with it). The CPU module is built for llama-server's own use.
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
  -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$KIT/.build/cmake-$ARCH.log"
cmake --build "$BUILD" --target ggml-cuda ggml-cpu llama-server -j "$(nproc)"
cp "$BUILD/bin/libggml-cuda.so" "$BINS/libggml-cuda.so"
ln -sf libggml-base.so "$BINS/libggml-base.so.0"
mkdir -p "$SERVER_DIR"
ln -sfn "$BUILD/bin" "$SERVER_DIR/bin"
echo "[build-cuda] built $BINS/libggml-cuda.so and $SERVER_DIR/bin/llama-server"
