// Draftline's native addon, things node-llama-cpp (3.21 and 3.22 alike) has no API for:
// - the greedy token (and, when asked, its probability) of several output positions of a
//   node-llama-cpp context, read in ONE synchronous call after the batch was decoded, in order and
//   only up to the first position that disagrees with the proposal (readGreedy);
// - a persistent CPU threadpool per context (attachThreadpool / releaseThreadpool);
// - the few highest logits of several positions, for alternative completions (readTop);
// - a batch decoded in one asynchronous call, without the library's batch queue (decode);
// - contexts of Draftline's own on a model node-llama-cpp loaded, with one KV stream for all their
//   sequences, so that a batch may hold a token tree (createUnified and the unified* functions:
//   unified.h says why).
//
// Why: node-llama-cpp gives a position's token only through `sampleToken`, one asynchronous
// native call per position (a hop through libuv's thread pool) that also copies the whole
// vocabulary's logits into a candidate array (under a lock in 3.22). Through it a plain step pays
// two round trips (decode, read) and a verify step k + 2 (bench/PROFILE.md has the costs). Here the
// read is an argmax over llama.cpp's own logits row on the calling thread: no copy, no hop.
//
// How it reaches the context: the JS object node-llama-cpp keeps for a context (`LlamaContext._ctx`)
// wraps its C++ `AddonContext`; we unwrap it (Node-API wraps are shared by all addons of a process)
// and read its `ctx` member, compiled against node-llama-cpp's own header for that class so the
// layout is the library's. `probe` checks the layout against facts the JS side knows (context size,
// batch size, sequences) before anything is dereferenced, and the llama.cpp functions are taken
// from the libllama that node-llama-cpp already loaded (never a second copy). The JS side uses this
// only for the llama.cpp release it was built against and falls back to `sampleToken` when
// anything here is missing or refuses (src/llama/nativeAddon.ts). Where the library's headers
// differ between versions in something this file uses, it is detected at compile time
// (SamplingLock, binding.h), so one source builds against every version's headers.
//
// Greedy is llama.cpp's greedy sampler exactly: the FIRST index of the largest logit (`>` scan from
// index 0, as `llama_sampler_greedy_apply`); the probability is 1 / Σ exp(logit - max) summed in
// token order in float: node-llama-cpp's `totalLogitWeight` (3.22+), returned as is so that the JS
// side computes the same double 1 / weight as it does from the library's value. (3.21 has no
// totalLogitWeight; its `confidence` is the same probability, computed after sorting the whole
// vocabulary, in float: equal to 1 / weight up to float rounding.)
//
// The parts, one file each: binding.cpp (libllama's functions, node-llama-cpp's context),
// reads.cpp (probe, readGreedy, readTop), decode.cpp, threadpool.cpp, deviceGreedy.cpp (the
// device sampler and its reads), transfers.cpp (the bytes each read cost), unified.cpp and
// unifiedOps.cpp (Draftline's own contexts); this file exports them.

#include "binding.h"
#include "decode.h"
#include "deviceGreedy.h"
#include "reads.h"
#include "threadpool.h"
#include "transfers.h"
#include "unified.h"
#include "unifiedOps.h"

namespace draftline {

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    // The calling contract of these files: nativeAddon.ts refuses a build with another (a stale dist/ file).
    exports.Set("apiVersion", Napi::Number::New(env, 6));
    exports.Set("decode", Napi::Function::New(env, Decode));
    exports.Set("timeSequenceCopy", Napi::Function::New(env, TimeSequenceCopy));
    exports.Set("createUnified", Napi::Function::New(env, CreateUnified));
    exports.Set("freeUnified", Napi::Function::New(env, FreeUnified));
    exports.Set("unifiedDecode", Napi::Function::New(env, UnifiedDecode));
    exports.Set("unifiedMemory", Napi::Function::New(env, UnifiedMemory));
    exports.Set("unifiedSaveState", Napi::Function::New(env, UnifiedSaveState));
    exports.Set("unifiedLoadState", Napi::Function::New(env, UnifiedLoadState));
    exports.Set("allowSampledOutputs", Napi::Function::New(env, AllowSampledOutputs));
    exports.Set("argmax", Napi::Function::New(env, Argmax));
    exports.Set("attachDeviceGreedy", Napi::Function::New(env, AttachDeviceGreedy));
    exports.Set("detachDeviceGreedy", Napi::Function::New(env, DetachDeviceGreedy));
    exports.Set("hostLogitBytes", Napi::Function::New(env, HostLogitBytes));
    exports.Set("readSampled", Napi::Function::New(env, ReadSampled));
    exports.Set("releaseDeviceGreedy", Napi::Function::New(env, ReleaseDeviceGreedy));
    exports.Set("sampledBytes", Napi::Function::New(env, SampledBytes));
    exports.Set("attachThreadpool", Napi::Function::New(env, AttachThreadpool));
    exports.Set("releaseThreadpool", Napi::Function::New(env, ReleaseThreadpool));
    exports.Set("probe", Napi::Function::New(env, Probe));
    exports.Set("readGreedy", Napi::Function::New(env, ReadGreedy));
    exports.Set("readTop", Napi::Function::New(env, ReadTop));
    exports.Set("llamaCppRelease", Napi::String::New(env, DRAFTLINE_LLAMA_CPP_RELEASE));
    exports.Set("nodeLlamaCppVersion", Napi::String::New(env, DRAFTLINE_NODE_LLAMA_CPP_VERSION));
    // Whether the headers it was built against have the library's sampling lock (node-llama-cpp 3.22+).
    exports.Set("takesSamplingLock", Napi::Boolean::New(env, SamplingLock<AddonContext>::exists));
    return exports;
}

}  // namespace

}  // namespace draftline

using draftline::Init;

NODE_API_MODULE(draftline_native, Init)
