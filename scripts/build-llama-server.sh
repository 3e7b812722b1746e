#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the source node-llama-cpp ships (llama/gitRelease.bundle),
# into bench/cache/llama-server (cached). `npm run bench` uses it when present: speculative decoding
# with -md and /infill, the way llama.vscode users run it. Where node-llama-cpp ships prebuilt
# libraries of the same release for this platform (Linux x64 and arm64), only the server and the
# quantize tool are compiled and linked against them (scripts/llama-server/CMakeLists.txt): a few
# minutes instead of the whole of llama.cpp (~30 min on 2 cores), and the server then computes with
# the very ggml kernels Draftline does. Elsewhere, or where that fails, the full build.
# DRAFTLINE_LLAMA_SERVER_FULL_BUILD=1 asks for the full build.
# The cache is keyed by the llama.cpp release node-llama-cpp ships (llama/llama.cpp.info.json `tag`):
# after a node-llama-cpp version move that changes the release, the old source and build are
# thrown away and rebuilt, so the bench never compares against a stale llama-server.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=bench/cache/llama-server
# DRAFTLINE_MACHINE_CACHE (set by scripts/test.sh): a folder outside the checkout that keeps the build
# for every checkout on this machine (CI's fresh clones among them), as a CI cache would. The checkout's
# bench/cache/llama-server then points there; the release check below still decides what is rebuilt.
if [ -n "${DRAFTLINE_MACHINE_CACHE:-}" ] && [ ! -e "$DIR" ]; then
  mkdir -p "$DRAFTLINE_MACHINE_CACHE/llama-server" "$(dirname "$DIR")"
  ln -s "$DRAFTLINE_MACHINE_CACHE/llama-server" "$DIR"
fi
if [ -L "$DIR" ]; then
  # One build at a time in the shared folder.
  exec 9>"$(readlink -f "$DIR").lock"
  flock 9
fi
BIN=$DIR/build/bin/llama-server
LLAMA=node_modules/node-llama-cpp/llama
RELEASE_STAMP=$DIR/llama.cpp-release
RELEASE=$(node -e 'const info = require(process.argv[1]); if (!info.tag) process.exit(1); process.stdout.write(info.tag)' "./$LLAMA/llama.cpp.info.json") ||
  { echo "cannot read the llama.cpp release from $LLAMA/llama.cpp.info.json (is node-llama-cpp installed?)" >&2; exit 1; }
CACHED_RELEASE=$(cat "$RELEASE_STAMP" 2>/dev/null || true)
if [ "$CACHED_RELEASE" != "$RELEASE" ]; then
  if [ -e "$DIR/src" ] || [ -e "$DIR/build" ]; then
    echo "llama-server cache is from llama.cpp ${CACHED_RELEASE:-(unknown release)}; node-llama-cpp ships $RELEASE: rebuilding"
  fi
  rm -rf "$DIR/src" "$DIR/build" "$RELEASE_STAMP"
fi
# A binary that cannot run here (e.g. built before the AMX rule below) is rebuilt.
if [ -x "$BIN" ] && [ -x "$DIR/build/bin/llama-quantize" ] && "$BIN" --version >/dev/null 2>&1 && [ -f "$DIR/build/.runs-here" ]; then echo "llama-server already built: $BIN (llama.cpp $RELEASE)"; exit 0; fi
mkdir -p "$DIR"
if [ ! -d "$DIR/src/.git" ]; then
  rm -rf "$DIR/src"
  git clone -q "$LLAMA/gitRelease.bundle" "$DIR/src"
fi
# Stamped before the (long) build: an interrupted build of this release resumes instead of restarting.
printf '%s\n' "$RELEASE" >"$RELEASE_STAMP"
# node-llama-cpp's prebuilt libraries for this platform (the same release as the bundle: both are that package's).
PLATFORM=$(node -p 'process.platform + "-" + process.arch')
PREBUILT=node_modules/@node-llama-cpp/$PLATFORM/bins/$PLATFORM
build_on_prebuilt() {
  local tool=$DIR/src/tools/draftline-server
  mkdir -p "$tool"
  cp scripts/llama-server/CMakeLists.txt "$tool/"
  # tools/ui finds its asset script under the project's folder.
  ln -sfn ../../scripts "$tool/scripts"
  rm -rf "$DIR/build"
  cmake -S "$tool" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release -DPREBUILT_BINS="$(readlink -f "$PREBUILT")" >/dev/null &&
    cmake --build "$DIR/build" --target llama-server llama-quantize -j "$(nproc)" &&
    cp "$PREBUILT"/*.so "$DIR/build/bin/" &&
    "$BIN" --version >/dev/null 2>&1
}
if [ "${DRAFTLINE_LLAMA_SERVER_FULL_BUILD:-}" != 1 ] && [ -f "$PREBUILT/libllama-common.so" ]; then
  if build_on_prebuilt; then
    touch "$DIR/build/.runs-here"
    echo "built $BIN on node-llama-cpp's prebuilt libraries (llama.cpp $RELEASE)"
    exit 0
  fi
  echo "building llama-server on node-llama-cpp's prebuilt libraries failed: building the whole of llama.cpp" >&2
  rm -rf "$DIR/build"
fi
# Built for this CPU, except AMX: where the CPU reports AMX tiles but the VM does not enable them
# (seen on an Intel Xeon VM), -march=native builds an llama-server that dies with SIGILL at the first decode
# (tilezero in ggml's AMX Q8_0 kernel). There, the same ISA without AMX.
ISA=(-DGGML_NATIVE=ON)
if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
  ISA=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=ON)
  grep -qw avx512f /proc/cpuinfo && ISA+=(-DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON)
fi
# RUNPATH $ORIGIN: the build works wherever the folder is (a machine cache found through a link).
cmake -S "$DIR/src" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DLLAMA_CURL=OFF "${ISA[@]}" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
# llama-quantize too: the bench quantises its random 1.5B to Q8_0 (bench/targets.ts), the way real models ship.
cmake --build "$DIR/build" --target llama-server llama-quantize -j "$(nproc)"
touch "$DIR/build/.runs-here"
echo "built $BIN (llama.cpp $RELEASE)"
