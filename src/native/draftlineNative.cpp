// Draftline's native addon, things node-llama-cpp (3.21 and 3.22 alike) has no API for:
// - the greedy token (and, when asked, its probability) of several output positions of a
//   node-llama-cpp context, read in ONE synchronous call after the batch was decoded, in order and
//   only up to the first position that disagrees with the proposal (readGreedy);
// - a persistent CPU threadpool per context (attachThreadpool / releaseThreadpool, below);
// - the few highest logits of several positions, for alternative completions (readTop);
// - a batch decoded in one asynchronous call, without the library's batch queue (decode, below).
//
// Why: node-llama-cpp gives a position's token only through `sampleToken`, one asynchronous
// native call per position (a hop through libuv's thread pool, ~0.1 ms here) that also copies the
// whole vocabulary's logits into a candidate array (~0.5 ms with a 152k vocabulary; under a lock
// since 3.22).
// A plain step paid two round trips (decode, read) and a verify step k + 2 (bench/PROFILE.md).
// Here the read is an argmax over llama.cpp's own logits row on the calling thread: ~2 µs for a
// 4k vocabulary, ~0.1 ms for 152k, no copy, no hop.
//
// How it reaches the context: the JS object node-llama-cpp keeps for a context (`LlamaContext._ctx`)
// wraps its C++ `AddonContext`; we unwrap it (Node-API wraps are shared by all addons of a process)
// and read its `ctx` member, compiled against node-llama-cpp's own header for that class so the
// layout is the library's. `probe` checks the layout against facts the JS side knows (context size,
// batch size, sequences) before anything is dereferenced, and the llama.cpp functions are taken
// from the libllama that node-llama-cpp already loaded (never a second copy). The JS side uses this
// only for the llama.cpp release it was built against and falls back to `sampleToken` when
// anything here is missing or refuses (src/inference/nativeAddon.ts). Where the library's headers
// differ between versions in something this file uses, it is detected at compile time
// (SamplingLock below), so one source builds against every version's headers.
//
// Greedy is llama.cpp's greedy sampler exactly: the FIRST index of the largest logit (`>` scan from
// index 0, as `llama_sampler_greedy_apply`); the probability is 1 / Σ exp(logit - max) summed in
// token order in float: node-llama-cpp's `totalLogitWeight` (3.22+), returned as is so that the JS
// side computes the same double 1 / weight as it does from the library's value. (3.21 has no
// totalLogitWeight; its `confidence` is the same probability, computed after sorting the whole
// vocabulary, in float: equal to 1 / weight up to float rounding.)

#include <dlfcn.h>
#include <link.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"

#include "AddonContext.h"
#include "napi.h"

namespace {

struct LlamaApi {
    decltype(&llama_get_logits_ith) get_logits_ith = nullptr;
    decltype(&llama_get_model) get_model = nullptr;
    decltype(&llama_model_get_vocab) model_get_vocab = nullptr;
    decltype(&llama_vocab_n_tokens) vocab_n_tokens = nullptr;
    decltype(&llama_n_ctx) n_ctx = nullptr;
    // decode (DecodeWorker): a batch of one sequence straight to llama_decode.
    decltype(&llama_batch_init) batch_init = nullptr;
    decltype(&llama_batch_free) batch_free = nullptr;
    decltype(&llama_decode) decode = nullptr;
    decltype(&llama_synchronize) synchronize = nullptr;
    // Backend sampling (llama.cpp samples on the device and keeps only candidates): not used by
    // node-llama-cpp 3.21 or 3.22; if a context ever has it, the logits row is not what the library samples.
    decltype(&llama_get_sampled_logits_ith) get_sampled_logits_ith = nullptr;
    decltype(&llama_get_sampled_probs_ith) get_sampled_probs_ith = nullptr;
    // A persistent CPU threadpool (see AttachThreadpool): llama.cpp's own, reached through libllama's dependencies.
    decltype(&llama_attach_threadpool) attach_threadpool = nullptr;
    decltype(&ggml_threadpool_params_default) threadpool_params_default = nullptr;
    decltype(&ggml_backend_dev_by_type) backend_dev_by_type = nullptr;
    decltype(&ggml_backend_dev_backend_reg) backend_dev_backend_reg = nullptr;
    decltype(&ggml_backend_reg_get_proc_address) backend_reg_get_proc_address = nullptr;
    // Device greedy (AttachDeviceGreedy): llama.cpp's backend sampling [EXPERIMENTAL], a greedy chain per sequence.
    decltype(&llama_sampler_chain_default_params) sampler_chain_default_params = nullptr;
    decltype(&llama_sampler_chain_init) sampler_chain_init = nullptr;
    decltype(&llama_sampler_chain_add) sampler_chain_add = nullptr;
    decltype(&llama_sampler_init_greedy) sampler_init_greedy = nullptr;
    decltype(&llama_sampler_free) sampler_free = nullptr;
    decltype(&llama_set_sampler) set_sampler = nullptr;
    decltype(&llama_get_sampled_token_ith) get_sampled_token_ith = nullptr;
    // The top-two chain (DeviceSampler::TopTwo) and what each sampled row shipped.
    decltype(&llama_sampler_init_top_k) sampler_init_top_k = nullptr;
    decltype(&llama_get_sampled_candidates_ith) get_sampled_candidates_ith = nullptr;
    decltype(&llama_get_sampled_candidates_count_ith) get_sampled_candidates_count_ith = nullptr;
    decltype(&llama_get_sampled_logits_count_ith) get_sampled_logits_count_ith = nullptr;
    decltype(&llama_get_sampled_probs_count_ith) get_sampled_probs_count_ith = nullptr;
    std::string library;
    std::string error;
    bool loaded = false;
};

int collectLlamaLibraries(struct dl_phdr_info* info, size_t, void* data) {
    auto* found = static_cast<std::vector<std::string>*>(data);
    if (info->dlpi_name == nullptr) return 0;
    const char* slash = std::strrchr(info->dlpi_name, '/');
    const char* base = slash ? slash + 1 : info->dlpi_name;
    // libllama.so, libllama.v0.5.0.so — not libllama-common.so.
    if (std::strncmp(base, "libllama.", 9) == 0 || std::strcmp(base, "libllama.so") == 0) found->emplace_back(info->dlpi_name);
    return 0;
}

template <typename F>
bool bind(void* handle, const char* name, F& target, bool required, std::string& error) {
    target = reinterpret_cast<F>(dlsym(handle, name));
    if (target == nullptr && required) {
        error = std::string("libllama has no ") + name;
        return false;
    }
    return true;
}

LlamaApi& api() {
    static LlamaApi instance;
    static std::once_flag once;
    std::call_once(once, [] {
        std::vector<std::string> libraries;
        dl_iterate_phdr(collectLlamaLibraries, &libraries);
        if (libraries.size() != 1) {
            instance.error = libraries.empty() ? "node-llama-cpp's libllama is not loaded in this process"
                                               : "more than one libllama is loaded in this process";
            return;
        }
        // RTLD_NOLOAD: the copy node-llama-cpp loaded, or nothing.
        void* handle = dlopen(libraries[0].c_str(), RTLD_LAZY | RTLD_NOLOAD);
        if (handle == nullptr) {
            instance.error = std::string("cannot reach the loaded libllama: ") + dlerror();
            return;
        }
        std::string& e = instance.error;
        if (bind(handle, "llama_get_logits_ith", instance.get_logits_ith, true, e) && bind(handle, "llama_get_model", instance.get_model, true, e) &&
            bind(handle, "llama_model_get_vocab", instance.model_get_vocab, true, e) && bind(handle, "llama_vocab_n_tokens", instance.vocab_n_tokens, true, e) &&
            bind(handle, "llama_n_ctx", instance.n_ctx, true, e) && bind(handle, "llama_batch_init", instance.batch_init, false, e) &&
            bind(handle, "llama_batch_free", instance.batch_free, false, e) && bind(handle, "llama_decode", instance.decode, false, e) &&
            bind(handle, "llama_synchronize", instance.synchronize, false, e) && bind(handle, "llama_get_sampled_logits_ith", instance.get_sampled_logits_ith, false, e) &&
            bind(handle, "llama_get_sampled_probs_ith", instance.get_sampled_probs_ith, false, e) &&
            // dlsym on libllama's handle also searches the libraries it depends on (libggml, libggml-base).
            bind(handle, "llama_attach_threadpool", instance.attach_threadpool, false, e) && bind(handle, "ggml_threadpool_params_default", instance.threadpool_params_default, false, e) &&
            bind(handle, "ggml_backend_dev_by_type", instance.backend_dev_by_type, false, e) &&
            bind(handle, "ggml_backend_dev_backend_reg", instance.backend_dev_backend_reg, false, e) &&
            bind(handle, "ggml_backend_reg_get_proc_address", instance.backend_reg_get_proc_address, false, e) &&
            bind(handle, "llama_sampler_chain_default_params", instance.sampler_chain_default_params, false, e) &&
            bind(handle, "llama_sampler_chain_init", instance.sampler_chain_init, false, e) && bind(handle, "llama_sampler_chain_add", instance.sampler_chain_add, false, e) &&
            bind(handle, "llama_sampler_init_greedy", instance.sampler_init_greedy, false, e) && bind(handle, "llama_sampler_free", instance.sampler_free, false, e) &&
            bind(handle, "llama_set_sampler", instance.set_sampler, false, e) && bind(handle, "llama_get_sampled_token_ith", instance.get_sampled_token_ith, false, e) &&
            bind(handle, "llama_sampler_init_top_k", instance.sampler_init_top_k, false, e) &&
            bind(handle, "llama_get_sampled_candidates_ith", instance.get_sampled_candidates_ith, false, e) &&
            bind(handle, "llama_get_sampled_candidates_count_ith", instance.get_sampled_candidates_count_ith, false, e) &&
            bind(handle, "llama_get_sampled_logits_count_ith", instance.get_sampled_logits_count_ith, false, e) &&
            bind(handle, "llama_get_sampled_probs_count_ith", instance.get_sampled_probs_count_ith, false, e)) {
            instance.library = libraries[0];
            instance.loaded = true;
        }
    });
    return instance;
}

// The first index of the largest logit, exactly as llama.cpp's greedy sampler picks it (a `>` scan
// from index 0, so NaNs are never picked unless at index 0). In two passes so the first vectorizes:
// the largest value over 8 independent lanes (`x > m ? x : m` is maxps, with the same NaN rule),
// then the first index holding it. 152k logits: ~0.03 ms instead of ~0.14 ms for the scalar scan.
int32_t firstArgmax(const float* logits, int32_t n) {
    if (n <= 0 || std::isnan(logits[0])) return 0;
    constexpr int32_t LANES = 8;
    float lane[LANES];
    for (int32_t k = 0; k < LANES; k++) lane[k] = logits[0];
    int32_t t = 0;
    for (; t + LANES <= n; t += LANES) {
        for (int32_t k = 0; k < LANES; k++) lane[k] = logits[t + k] > lane[k] ? logits[t + k] : lane[k];
    }
    float best = logits[0];
    for (int32_t k = 0; k < LANES; k++) best = lane[k] > best ? lane[k] : best;
    for (; t < n; t++) best = logits[t] > best ? logits[t] : best;
    for (int32_t i = 0; i < n; i++) {
        if (logits[i] == best) return i;
    }
    return 0;
}

// node-llama-cpp 3.22 copies a position's logits into the sampler's candidates under
// AddonContext::sharedSamplerData.mutex, and we take it too, so that a stray sampleToken of another
// sequence of the same context cannot interleave with our read. 3.21's AddonContext has no such lock
// (its sampleToken reads the logits unlocked): there, nothing to take. Reads of the logits do not
// conflict with each other; a decode, the only writer, is awaited by the evaluator before it reads,
// and Draftline gives each context one sequence.
template <typename Context, typename = void>
struct SamplingLock {
    static constexpr bool exists = false;
    explicit SamplingLock(Context*) {}
};
template <typename Context>
struct SamplingLock<Context, std::void_t<decltype(std::declval<Context&>().sharedSamplerData.mutex)>> {
    static constexpr bool exists = true;
    std::lock_guard<std::mutex> lock;
    explicit SamplingLock(Context* context) : lock(context->sharedSamplerData.mutex) {}
};

AddonContext* unwrapContext(Napi::Env env, Napi::Value value) {
    if (!value.IsObject()) throw Napi::TypeError::New(env, "expected node-llama-cpp's native context object");
    void* wrapped = nullptr;
    if (napi_unwrap(env, value, &wrapped) != napi_ok || wrapped == nullptr) {
        throw Napi::TypeError::New(env, "the object is not a wrapped native context");
    }
    return static_cast<AddonContext*>(wrapped);
}

llama_context* liveContext(Napi::Env env, AddonContext* addon) {
    if (addon->disposed || addon->memoryDisposed || !addon->contextLoaded || addon->ctx == nullptr) throw Napi::Error::New(env, "the context is disposed or not loaded");
    return addon->ctx;
}

// The logits of batch output `batchIndex`, as the library samples from them: refused where the
// context samples on its backend (the logits there are not what the library's sampler reads).
const float* libraryLogits(Napi::Env env, LlamaApi& llama, llama_context* ctx, int32_t batchIndex, int32_t vocabularySize) {
    if ((llama.get_sampled_logits_ith && llama.get_sampled_logits_ith(ctx, batchIndex) != nullptr) ||
        (llama.get_sampled_probs_ith && llama.get_sampled_probs_ith(ctx, batchIndex) != nullptr)) {
        throw Napi::Error::New(env, "the context samples on its backend: its logits are not what the library samples from");
    }
    const float* logits = llama.get_logits_ith(ctx, batchIndex);
    if (logits == nullptr || vocabularySize <= 0) throw Napi::Error::New(env, "no logits at batch output " + std::to_string(batchIndex));
    return logits;
}

// Device greedy: a greedy sampler chain attached to a sequence with llama.cpp's backend sampling
// [EXPERIMENTAL] (llama_set_sampler): the argmax of every output row runs on the device in the decode's
// own graph (ggml_argmax) and only the sampled token comes back to the host (4 bytes a position instead
// of a whole row of logits). Once every output of a batch belongs to a sequence with a sampler,
// llama.cpp no longer copies the raw logits to the host (needs_raw_logits): llama_get_logits_ith then
// returns the rows of an older batch, so readGreedy / readTop refuse a context with a chain attached.
// Chains are ours (llama.cpp only borrows them) and kept while attached: one per (context, sequence).
// A chain is never attached twice (llama.cpp asserts when a chain's backend is initialised twice):
// every attach makes a new one. Each entry remembers the llama_context it was attached to: an entry
// whose AddonContext now holds another (or none) outlived its llama context and is only freed.
//
// Two chains. `argmax`: llama.cpp's greedy sampler (ggml_argmax). Its sampled token comes back, but
// the greedy sampler leaves the row's logits as the chain's output logits, so llama.cpp still copies
// the whole row to the host (into its sampled-logits buffer): no transfer saved, only the host's
// argmax; and ggml_argmax keeps the LAST of equal logits (CPU; Vulkan here too), where llama.cpp's
// greedy sampler keeps the first. `top2` (the default): top_k(2) (ggml_top_k), whose outputs are the
// two best token ids and their logits, 16 bytes a row: the greedy token is the larger when they
// differ; when they are equal the tie is reported (readSampled's token -2) and the caller reads that
// batch's rows on the host: the same tokens as llama.cpp's greedy sampler always.
enum class DeviceSampler { Argmax, TopTwo };

struct DeviceGreedy {
    AddonContext* addon;
    int32_t seq;
    llama_sampler* chain;
    llama_context* ctx;
    DeviceSampler kind;
};
std::mutex deviceGreedyMutex;
std::vector<DeviceGreedy> deviceGreedy;

bool deviceGreedyAvailable(LlamaApi& llama) {
    return llama.sampler_chain_default_params && llama.sampler_chain_init && llama.sampler_chain_add && llama.sampler_init_greedy && llama.sampler_free &&
           llama.set_sampler && llama.get_sampled_token_ith && llama.get_sampled_logits_ith && llama.get_sampled_logits_count_ith &&
           llama.get_sampled_probs_count_ith && llama.get_sampled_candidates_count_ith;
}

bool topTwoAvailable(LlamaApi& llama) {
    return llama.sampler_init_top_k && llama.get_sampled_candidates_ith;
}

// Under deviceGreedyMutex and the context's disposeMutex: frees the entries of `addon` that outlived
// their llama context (nothing to detach them from), and says whether one is attached to its live one.
bool pruneAndFindAttached(AddonContext* addon, LlamaApi& llama) {
    bool attached = false;
    for (size_t i = 0; i < deviceGreedy.size();) {
        DeviceGreedy& entry = deviceGreedy[i];
        if (entry.addon == addon && (entry.ctx != addon->ctx || addon->memoryDisposed || addon->disposed)) {
            llama.sampler_free(entry.chain);
            deviceGreedy.erase(deviceGreedy.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
        }
        if (entry.addon == addon) attached = true;
        i++;
    }
    return attached;
}

// Under deviceGreedyMutex and the context's disposeMutex (taken in that order everywhere). `seq`:
// the sequence whose outputs are read, when the caller knows it (-1: any of the context's). The rows of
// a sequence WITHOUT a sampler are always copied (llama.cpp copies a ubatch's rows when one of its
// outputs needs them), so another sequence's chain does not make them stale.
void refuseIfDeviceGreedy(Napi::Env env, AddonContext* addon, LlamaApi& llama, int32_t seq) {
    if (!deviceGreedyAvailable(llama)) return;
    if (!pruneAndFindAttached(addon, llama)) return;
    for (const DeviceGreedy& entry : deviceGreedy) {
        if (entry.addon == addon && (seq < 0 || entry.seq == seq)) {
            throw Napi::Error::New(env, "a device greedy sampler is attached to this context: its host logits are stale (detachDeviceGreedy first)");
        }
    }
}

// Bytes of logits the readers read on the host (a row of vocabularySize floats per position): the
// issue's proxy for what verifying costs in transfers. readSampled reads none.
std::mutex hostBytesMutex;
std::unordered_map<AddonContext*, double> hostBytesByContext;
double hostBytesTotal = 0;
// Bytes llama.cpp copied to the host for the rows readSampled read (sampled token, candidates,
// logits, probabilities): what a verified position costs in transfers on the device path.
std::unordered_map<AddonContext*, double> sampledBytesByContext;
double sampledBytesTotal = 0;

void countHostBytes(AddonContext* addon, int32_t positions, int32_t vocabularySize) {
    const double bytes = static_cast<double>(positions) * vocabularySize * sizeof(float);
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    hostBytesByContext[addon] += bytes;
    hostBytesTotal += bytes;
}

// probe(context, contextCells, batchSize, sequences) → { vocabularySize, library }
// Checks, before dereferencing anything the object points to, that the C++ object has the layout of
// the header this was built against: its copy of the context parameters must hold the sizes the JS
// side gave llama.cpp (node-llama-cpp asks for contextSize × sequences cells, padded up to 256, and
// one more batch slot for sliding-window models). Then asks llama.cpp itself through the pointer.
Napi::Value Probe(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 4) throw Napi::TypeError::New(env, "probe(context, contextSize, batchSize, sequences)");
    AddonContext* addon = unwrapContext(env, info[0]);
    const uint32_t contextSize = info[1].As<Napi::Number>().Uint32Value();
    const uint32_t batchSize = info[2].As<Napi::Number>().Uint32Value();
    const uint32_t sequences = info[3].As<Napi::Number>().Uint32Value();
    const llama_context_params& params = addon->context_params;
    if (params.n_ctx != contextSize || (params.n_batch != batchSize && params.n_batch != batchSize + 1) || params.n_seq_max != sequences) {
        throw Napi::Error::New(env, "the native context's layout differs from the header this reader was built against (context sizes do not match)");
    }
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    if (llama.n_ctx(ctx) < contextSize) throw Napi::Error::New(env, "llama.cpp reports a smaller context than the one made");
    Napi::Object result = Napi::Object::New(env);
    result.Set("vocabularySize", llama.vocab_n_tokens(llama.model_get_vocab(llama.get_model(ctx))));
    result.Set("library", llama.library);
    return result;
}

// readGreedy(context, batchIndexes: Int32Array, count, expected: Int32Array, expectedCount,
//            withWeights, outTokens: Int32Array, outWeights: Float32Array, sequenceId = -1) → positions read
// Position j (0-based) is batch output batchIndexes[j]. Reading stops after the first j whose token
// is not expected[j] or with j ≥ expectedCount: a verify step needs nothing after its first
// rejection. expectedCount -1 reads all `count` positions. outWeights[j] = Σ exp(logit - max).
// Refused while a device greedy chain is attached to sequence `sequenceId` (-1: to any sequence of
// the context): its rows are not copied to the host any more.
Napi::Value ReadGreedy(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 8) throw Napi::TypeError::New(env, "readGreedy(context, batchIndexes, count, expected, expectedCount, withWeights, outTokens, outWeights)");
    AddonContext* addon = unwrapContext(env, info[0]);
    auto batchIndexes = info[1].As<Napi::Int32Array>();
    const int32_t count = info[2].As<Napi::Number>().Int32Value();
    auto expected = info[3].As<Napi::Int32Array>();
    const int32_t expectedCount = info[4].As<Napi::Number>().Int32Value();
    const bool withWeights = info[5].As<Napi::Boolean>().Value();
    auto outTokens = info[6].As<Napi::Int32Array>();
    auto outWeights = info[7].As<Napi::Float32Array>();
    const int32_t sequence = info.Length() > 8 && info[8].IsNumber() ? info[8].As<Napi::Number>().Int32Value() : -1;
    if (count < 0 || static_cast<size_t>(count) > batchIndexes.ElementLength() || static_cast<size_t>(count) > outTokens.ElementLength() ||
        static_cast<size_t>(count) > outWeights.ElementLength() || (expectedCount > 0 && static_cast<size_t>(expectedCount) > expected.ElementLength())) {
        throw Napi::RangeError::New(env, "readGreedy: arrays shorter than the counts");
    }
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    // node-llama-cpp's dispose clears `ctx` under this lock before it frees the llama context: held,
    // the context cannot be freed under the read.
    std::lock_guard<std::mutex> attaching(deviceGreedyMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    // The library's sampling lock, where its version has one (see SamplingLock).
    refuseIfDeviceGreedy(env, addon, llama, sequence);
    SamplingLock<AddonContext> sampling(addon);
    const int32_t vocabularySize = llama.vocab_n_tokens(llama.model_get_vocab(llama.get_model(ctx)));
    int32_t read = 0;
    for (int32_t j = 0; j < count; j++) {
        const int32_t batchIndex = batchIndexes[j];
        const float* logits = libraryLogits(env, llama, ctx, batchIndex, vocabularySize);
        const int32_t selected = firstArgmax(logits, vocabularySize);
        const float best = logits[selected];
        outTokens[j] = selected;
        if (withWeights) {
            float sum = 0.0f;
            for (int32_t t = 0; t < vocabularySize; t++) sum += expf(logits[t] - best);
            outWeights[j] = sum;
        }
        read = j + 1;
        if (expectedCount >= 0 && (j >= expectedCount || expected[j] != selected)) break;
    }
    countHostBytes(addon, read, vocabularySize);
    return Napi::Number::New(env, read);
}

// readTop(context, batchIndexes: Int32Array, count, top, outTokens: Int32Array, outLogits: Float32Array,
//         sequenceId = -1) → positions read (count)
// The `top` highest logits of each position, best first, into outTokens/outLogits[j * top + r]: what
// alternative completions branch on (read only when the user asks for them). Ties go to the lower
// token id, so rank 0 is the greedy token exactly as readGreedy (and llama.cpp's greedy sampler) picks
// it; NaN logits are never ranked. One pass a position, inserting into a short sorted list: no copy
// and no sort of the vocabulary (node-llama-cpp's probabilities sort all of it, ~18 ms for 152k).
Napi::Value ReadTop(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 6) throw Napi::TypeError::New(env, "readTop(context, batchIndexes, count, top, outTokens, outLogits)");
    AddonContext* addon = unwrapContext(env, info[0]);
    auto batchIndexes = info[1].As<Napi::Int32Array>();
    const int32_t count = info[2].As<Napi::Number>().Int32Value();
    const int32_t top = info[3].As<Napi::Number>().Int32Value();
    auto outTokens = info[4].As<Napi::Int32Array>();
    auto outLogits = info[5].As<Napi::Float32Array>();
    const int32_t sequence = info.Length() > 6 && info[6].IsNumber() ? info[6].As<Napi::Number>().Int32Value() : -1;
    if (count < 0 || top < 1 || top > 64 || static_cast<size_t>(count) > batchIndexes.ElementLength() ||
        static_cast<size_t>(count) * top > outTokens.ElementLength() || static_cast<size_t>(count) * top > outLogits.ElementLength()) {
        throw Napi::RangeError::New(env, "readTop: arrays shorter than the counts, or top out of 1..64");
    }
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    std::lock_guard<std::mutex> attaching(deviceGreedyMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    refuseIfDeviceGreedy(env, addon, llama, sequence);
    SamplingLock<AddonContext> sampling(addon);
    const int32_t vocabularySize = llama.vocab_n_tokens(llama.model_get_vocab(llama.get_model(ctx)));
    countHostBytes(addon, count, vocabularySize);
    for (int32_t j = 0; j < count; j++) {
        const int32_t batchIndex = batchIndexes[j];
        const float* logits = libraryLogits(env, llama, ctx, batchIndex, vocabularySize);
        int32_t* tokens = outTokens.Data() + static_cast<size_t>(j) * top;
        float* values = outLogits.Data() + static_cast<size_t>(j) * top;
        int32_t filled = 0;
        for (int32_t t = 0; t < vocabularySize; t++) {
            const float logit = logits[t];
            if (std::isnan(logit)) continue;
            // Strictly greater than the last kept: an equal logit later in the vocabulary ranks after.
            if (filled == top && !(logit > values[top - 1])) continue;
            int32_t at = filled < top ? filled++ : top - 1;
            while (at > 0 && logit > values[at - 1]) {
                values[at] = values[at - 1];
                tokens[at] = tokens[at - 1];
                at--;
            }
            values[at] = logit;
            tokens[at] = t;
        }
        // A vocabulary smaller than `top` (or all NaN): the rest marked empty.
        for (int32_t r = filled; r < top; r++) {
            tokens[r] = -1;
            values[r] = -INFINITY;
        }
    }
    return Napi::Number::New(env, count);
}

// Persistent CPU threadpools, one per context that asked. Without one, llama.cpp (built without
// OpenMP, as node-llama-cpp's prebuilt binaries are) creates and joins its worker threads for every
// graph it computes: with 2+ threads that is every decode step.
std::mutex poolsMutex;
std::unordered_map<AddonContext*, ggml_threadpool*> pools;

struct ThreadpoolApi {
    decltype(&ggml_threadpool_new) create = nullptr;
    decltype(&ggml_threadpool_free) free = nullptr;
};

ThreadpoolApi threadpoolApi(Napi::Env env) {
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    if (!llama.attach_threadpool || !llama.threadpool_params_default || !llama.backend_dev_by_type || !llama.backend_dev_backend_reg ||
        !llama.backend_reg_get_proc_address) {
        throw Napi::Error::New(env, "this llama.cpp has no threadpool API");
    }
    ggml_backend_dev_t cpu = llama.backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr) throw Napi::Error::New(env, "no CPU backend is loaded");
    ggml_backend_reg_t reg = llama.backend_dev_backend_reg(cpu);
    ThreadpoolApi t;
    t.create = reinterpret_cast<decltype(&ggml_threadpool_new)>(llama.backend_reg_get_proc_address(reg, "ggml_threadpool_new"));
    t.free = reinterpret_cast<decltype(&ggml_threadpool_free)>(llama.backend_reg_get_proc_address(reg, "ggml_threadpool_free"));
    if (!t.create || !t.free) throw Napi::Error::New(env, "the CPU backend has no threadpool functions");
    return t;
}

// attachThreadpool(context, threads, poll) → true. Call before the context's first decode and never
// while one runs; releaseThreadpool once the context is disposed.
Napi::Value AttachThreadpool(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    AddonContext* addon = unwrapContext(env, info[0]);
    const int32_t threads = info[1].As<Napi::Number>().Int32Value();
    const uint32_t poll = info[2].As<Napi::Number>().Uint32Value();
    if (threads < 1 || threads > GGML_MAX_N_THREADS) throw Napi::RangeError::New(env, "threads out of range");
    ThreadpoolApi t = threadpoolApi(env);
    std::lock_guard<std::mutex> lock(poolsMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    if (pools.count(addon)) throw Napi::Error::New(env, "the context already has a threadpool");
    ggml_threadpool_params params = api().threadpool_params_default(threads);
    params.poll = poll;
    ggml_threadpool* pool = t.create(&params);
    if (pool == nullptr) throw Napi::Error::New(env, "llama.cpp could not create a threadpool");
    api().attach_threadpool(ctx, pool, pool);
    pools[addon] = pool;
    return Napi::Boolean::New(env, true);
}

// releaseThreadpool(context) → whether it had one. Only once the context is disposed: llama.cpp's
// CPU backend keeps a pointer to the last threadpool it computed with and pauses it when it switches
// to another (or none), so a pool freed under a live context would be touched after its free.
Napi::Value ReleaseThreadpool(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    AddonContext* addon = unwrapContext(env, info[0]);
    std::lock_guard<std::mutex> lock(poolsMutex);
    auto it = pools.find(addon);
    if (it == pools.end()) return Napi::Boolean::New(env, false);
    {
        std::lock_guard<std::mutex> disposing(addon->disposeMutex);
        if (!addon->memoryDisposed && addon->ctx != nullptr) throw Napi::Error::New(env, "dispose the context before releasing its threadpool");
    }
    threadpoolApi(env).free(it->second);
    pools.erase(it);
    return Napi::Boolean::New(env, true);
}

// allowSampledOutputs(context) → true. Before the context is created (between node-llama-cpp's
// `new AddonContext` and its `init`): lets a sequence with a device sampler have as many outputs in a
// batch as the batch may have (llama.cpp's default context parameters allow one, so a verify batch
// of k + 1 outputs on a sampled sequence fails to decode). Changes nothing for a context that never
// attaches a sampler (llama.cpp reads the limit only for sequences with one).
Napi::Value AllowSampledOutputs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    AddonContext* addon = unwrapContext(env, info[0]);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    if (addon->contextLoaded || addon->ctx != nullptr || addon->disposed) throw Napi::Error::New(env, "the context is already created");
    llama_context_params& params = addon->context_params;
    // llama_context_default_params' values, which node-llama-cpp leaves as they are: the layout check.
    if (params.n_outputs_max != 0 || (params.n_outputs_max_per_seq != 1 && params.n_outputs_max_per_seq != 0) || params.n_seq_max < 1 || params.n_ctx < 1 ||
        params.n_threads != params.n_threads_batch) {
        throw Napi::Error::New(env, "the native context's layout differs from the header this addon was built against");
    }
    params.n_outputs_max_per_seq = 0;  // = n_outputs_max = n_batch
    return Napi::Boolean::New(env, true);
}

// attachDeviceGreedy(context, seqId) → { offloaded, reason? }. A new greedy chain set as the
// sequence's backend sampler. offloaded false (with llama.cpp's reason where it gives one) when it
// cannot be: the context then reads its logits on the host as before.
Napi::Value AttachDeviceGreedy(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2) throw Napi::TypeError::New(env, "attachDeviceGreedy(context, seqId)");
    AddonContext* addon = unwrapContext(env, info[0]);
    const int32_t seq = info[1].As<Napi::Number>().Int32Value();
    const std::string mode = info.Length() > 2 && info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "top2";
    if (mode != "top2" && mode != "argmax") throw Napi::TypeError::New(env, "attachDeviceGreedy: mode is top2 or argmax");
    const DeviceSampler kind = mode == "top2" ? DeviceSampler::TopTwo : DeviceSampler::Argmax;
    Napi::Object result = Napi::Object::New(env);
    result.Set("mode", mode);
    auto refuse = [&](const std::string& reason) {
        result.Set("offloaded", false);
        result.Set("reason", reason);
        return result;
    };
    LlamaApi& llama = api();
    if (!llama.loaded) return refuse(llama.error);
    if (!deviceGreedyAvailable(llama)) return refuse("this llama.cpp has no backend sampling API");
    if (kind == DeviceSampler::TopTwo && !topTwoAvailable(llama)) return refuse("this llama.cpp has no backend top-k API");
    std::lock_guard<std::mutex> lock(deviceGreedyMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    const llama_context_params& params = addon->context_params;
    if (seq < 0 || static_cast<uint32_t>(seq) >= params.n_seq_max) throw Napi::RangeError::New(env, "no such sequence");
    pruneAndFindAttached(addon, llama);
    for (const DeviceGreedy& entry : deviceGreedy) {
        if (entry.addon == addon && entry.seq == seq) {
            if (entry.kind != kind) throw Napi::Error::New(env, "the sequence has a device sampler of the other mode: detach it first");
            result.Set("offloaded", true);
            return result;
        }
    }
    if (params.n_outputs_max_per_seq != 0 && params.n_outputs_max_per_seq < params.n_batch) {
        return refuse("the context was created allowing " + std::to_string(params.n_outputs_max_per_seq) +
                      " sampled output(s) per sequence in a batch (allowSampledOutputs before it is created)");
    }
    llama_sampler* chain = llama.sampler_chain_init(llama.sampler_chain_default_params());
    if (chain == nullptr) return refuse("llama.cpp could not make a sampler chain");
    llama.sampler_chain_add(chain, kind == DeviceSampler::TopTwo ? llama.sampler_init_top_k(2) : llama.sampler_init_greedy());
    if (!llama.set_sampler(ctx, seq, chain)) {
        llama.sampler_free(chain);
        return refuse("llama.cpp cannot offload the sampler to this context's backend");
    }
    deviceGreedy.push_back({addon, seq, chain, ctx, kind});
    result.Set("offloaded", true);
    return result;
}

// detachDeviceGreedy(context, seqId) → whether it had one. From a live context it is unset first
// (llama.cpp reads raw logits to the host again from the next decode); then the chain is freed.
Napi::Value DetachDeviceGreedy(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2) throw Napi::TypeError::New(env, "detachDeviceGreedy(context, seqId)");
    AddonContext* addon = unwrapContext(env, info[0]);
    const int32_t seq = info[1].As<Napi::Number>().Int32Value();
    LlamaApi& llama = api();
    if (!llama.loaded || !deviceGreedyAvailable(llama)) return Napi::Boolean::New(env, false);
    std::lock_guard<std::mutex> lock(deviceGreedyMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    pruneAndFindAttached(addon, llama);
    for (size_t i = 0; i < deviceGreedy.size(); i++) {
        DeviceGreedy& entry = deviceGreedy[i];
        if (entry.addon != addon || entry.seq != seq) continue;
        // pruneAndFindAttached left only entries of the live context.
        llama.set_sampler(entry.ctx, seq, nullptr);
        llama.sampler_free(entry.chain);
        deviceGreedy.erase(deviceGreedy.begin() + static_cast<std::ptrdiff_t>(i));
        return Napi::Boolean::New(env, true);
    }
    return Napi::Boolean::New(env, false);
}

// releaseDeviceGreedy(context) → how many chains it freed: every sequence's, detached from a live
// context first. For a context disposed with chains still attached (llama_free never frees them).
Napi::Value ReleaseDeviceGreedy(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    AddonContext* addon = unwrapContext(env, info[0]);
    LlamaApi& llama = api();
    if (!llama.loaded || !deviceGreedyAvailable(llama)) return Napi::Number::New(env, 0);
    std::lock_guard<std::mutex> lock(deviceGreedyMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    int32_t freed = 0;
    for (size_t i = 0; i < deviceGreedy.size();) {
        DeviceGreedy& entry = deviceGreedy[i];
        if (entry.addon != addon) {
            i++;
            continue;
        }
        if (entry.ctx == addon->ctx && !addon->memoryDisposed && !addon->disposed) llama.set_sampler(entry.ctx, entry.seq, nullptr);
        llama.sampler_free(entry.chain);
        deviceGreedy.erase(deviceGreedy.begin() + static_cast<std::ptrdiff_t>(i));
        freed++;
    }
    return Napi::Number::New(env, freed);
}

// readSampled(context, batchIndexes: Int32Array, count, expected: Int32Array, expectedCount,
//             outTokens: Int32Array) → positions read
// readGreedy's contract (same stops) for a context whose sequence has a device sampler: each
// position's token from what the device sampled (top2: the larger of the two best; argmax: the
// sampled token), no row of logits read. top2: a position whose two best logits are equal reads as
// token -2 and ends the read (its greedy token needs the whole row: the caller decodes again without
// the sampler).
Napi::Value ReadSampled(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 6) throw Napi::TypeError::New(env, "readSampled(context, batchIndexes, count, expected, expectedCount, outTokens)");
    AddonContext* addon = unwrapContext(env, info[0]);
    auto batchIndexes = info[1].As<Napi::Int32Array>();
    const int32_t count = info[2].As<Napi::Number>().Int32Value();
    auto expected = info[3].As<Napi::Int32Array>();
    const int32_t expectedCount = info[4].As<Napi::Number>().Int32Value();
    auto outTokens = info[5].As<Napi::Int32Array>();
    if (count < 0 || static_cast<size_t>(count) > batchIndexes.ElementLength() || static_cast<size_t>(count) > outTokens.ElementLength() ||
        (expectedCount > 0 && static_cast<size_t>(expectedCount) > expected.ElementLength())) {
        throw Napi::RangeError::New(env, "readSampled: arrays shorter than the counts");
    }
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    if (!deviceGreedyAvailable(llama)) throw Napi::Error::New(env, "this llama.cpp has no backend sampling API");
    std::lock_guard<std::mutex> lock(deviceGreedyMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    if (!pruneAndFindAttached(addon, llama)) throw Napi::Error::New(env, "no device greedy sampler is attached to this context");
    // The context's mode (Draftline attaches one per context; with several, the first found).
    DeviceSampler kind = DeviceSampler::TopTwo;
    for (const DeviceGreedy& entry : deviceGreedy) {
        if (entry.addon == addon) {
            kind = entry.kind;
            break;
        }
    }
    int32_t read = 0;
    double shipped = 0;
    for (int32_t j = 0; j < count; j++) {
        const int32_t i = batchIndexes[j];
        llama_token token = LLAMA_TOKEN_NULL;
        if (kind == DeviceSampler::Argmax) {
            token = llama.get_sampled_token_ith(ctx, i);
            if (token != LLAMA_TOKEN_NULL) shipped += sizeof(llama_token);
        } else {
            const llama_token* candidates = llama.get_sampled_candidates_ith(ctx, i);
            const float* logits = llama.get_sampled_logits_ith(ctx, i);
            const uint32_t n = llama.get_sampled_candidates_count_ith(ctx, i);
            if (candidates != nullptr && logits != nullptr && n >= 1 && llama.get_sampled_logits_count_ith(ctx, i) == n) {
                if (n == 1 || logits[0] > logits[1]) {
                    token = candidates[0];
                } else if (logits[1] > logits[0]) {
                    token = candidates[1];
                } else {
                    token = -2;  // a tie (or a NaN): llama.cpp's greedy sampler decides on the whole row
                }
            }
        }
        if (token == LLAMA_TOKEN_NULL) throw Napi::Error::New(env, "no sampled token at batch output " + std::to_string(i));
        shipped += 4.0 * (llama.get_sampled_logits_count_ith(ctx, i) + llama.get_sampled_probs_count_ith(ctx, i) + llama.get_sampled_candidates_count_ith(ctx, i));
        outTokens[j] = token;
        read = j + 1;
        if (token == -2 || (expectedCount >= 0 && (j >= expectedCount || expected[j] != token))) break;
    }
    {
        std::lock_guard<std::mutex> counting(hostBytesMutex);
        sampledBytesByContext[addon] += shipped;
        sampledBytesTotal += shipped;
    }
    return Napi::Number::New(env, read);
}

// decode(context, sequenceId, firstPosition, tokens: Int32Array, firstOutput) → Promise<void>
// One batch of one sequence, tokens at positions firstPosition.., outputs (logits) at tokens
// firstOutput.. — batch output j is token firstOutput + j, which readGreedy / readTop / readSampled
// then read — decoded by llama_decode on a libuv worker thread, as node-llama-cpp's decodeBatch does.
// Why not the library's: its batch queue (a lock, a scheduling turn, thread reservations, per-batch
// allocations and a promise per output) costs a fixed amount per step that a plain step on a fast
// backend pays in full (bench/PROFILE.md). The caller keeps the library's sequence state in step
// (LlamaSequenceEvaluator) and never runs it while the library decodes on the same context. Holds the
// context's disposeMutex while it decodes: node-llama-cpp clears `ctx` under it before freeing the
// llama context, so the context cannot be freed under the batch.
class DecodeWorker : public Napi::AsyncWorker {
   public:
    DecodeWorker(Napi::Env env, AddonContext* addon, int32_t sequence, int32_t firstPosition, std::vector<llama_token> tokens, int32_t firstOutput)
        : Napi::AsyncWorker(env, "DraftlineDecode"),
          addon(addon),
          sequence(sequence),
          firstPosition(firstPosition),
          tokens(std::move(tokens)),
          firstOutput(firstOutput),
          deferred(Napi::Promise::Deferred::New(env)) {
        addon->Ref();
    }
    ~DecodeWorker() override { addon->Unref(); }
    Napi::Promise promise() { return deferred.Promise(); }

   protected:
    void Execute() override {
        LlamaApi& llama = api();
        const int32_t n = static_cast<int32_t>(tokens.size());
        std::lock_guard<std::mutex> disposing(addon->disposeMutex);
        if (addon->disposed || addon->memoryDisposed || !addon->contextLoaded || addon->ctx == nullptr) {
            SetError("the context is disposed or not loaded");
            return;
        }
        llama_batch batch = llama.batch_init(n, 0, 1);
        for (int32_t i = 0; i < n; i++) {
            batch.token[i] = tokens[i];
            batch.pos[i] = firstPosition + i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = sequence;
            batch.logits[i] = i >= firstOutput ? 1 : 0;
        }
        batch.n_tokens = n;
        try {
            const int32_t r = llama.decode(addon->ctx, batch);
            // The library's wording for the same failures.
            if (r == 1) SetError("could not find a KV slot for the batch (try reducing the size of the batch or increase the context)");
            else if (r != 0) SetError("Eval has failed (llama_decode returned " + std::to_string(r) + ")");
            else llama.synchronize(addon->ctx);
        } catch (const std::exception& e) {
            SetError(e.what());
        } catch (...) {
            SetError("Unknown error when calling \"llama_decode\"");
        }
        llama.batch_free(batch);
    }
    void OnOK() override { deferred.Resolve(Env().Undefined()); }
    void OnError(const Napi::Error& error) override { deferred.Reject(error.Value()); }

   private:
    AddonContext* addon;
    int32_t sequence;
    int32_t firstPosition;
    std::vector<llama_token> tokens;
    int32_t firstOutput;
    Napi::Promise::Deferred deferred;
};

Napi::Value Decode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 5) throw Napi::TypeError::New(env, "decode(context, sequenceId, firstPosition, tokens, firstOutput)");
    AddonContext* addon = unwrapContext(env, info[0]);
    const int32_t sequence = info[1].As<Napi::Number>().Int32Value();
    const int32_t firstPosition = info[2].As<Napi::Number>().Int32Value();
    auto input = info[3].As<Napi::Int32Array>();
    const int32_t firstOutput = info[4].As<Napi::Number>().Int32Value();
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    if (!llama.batch_init || !llama.batch_free || !llama.decode || !llama.synchronize) throw Napi::Error::New(env, "libllama has no llama_batch_init, llama_decode or llama_synchronize");
    const int32_t n = static_cast<int32_t>(input.ElementLength());
    if (n <= 0 || static_cast<uint32_t>(n) > addon->context_params.n_batch) throw Napi::RangeError::New(env, "decode: the batch is empty or larger than the context's batch size");
    if (sequence < 0 || static_cast<uint32_t>(sequence) >= addon->context_params.n_seq_max) throw Napi::RangeError::New(env, "decode: no such sequence");
    if (firstPosition < 0 || firstOutput < 0 || firstOutput > n) throw Napi::RangeError::New(env, "decode: bad position or output");
    {
        std::lock_guard<std::mutex> disposing(addon->disposeMutex);
        liveContext(env, addon);
    }
    std::vector<llama_token> tokens(input.Data(), input.Data() + n);
    auto* worker = new DecodeWorker(env, addon, sequence, firstPosition, std::move(tokens), firstOutput);
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
}

// sampledBytes(context?) → bytes llama.cpp copied to the host for the rows readSampled read.
Napi::Value SampledBytes(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    if (info.Length() < 1 || info[0].IsUndefined()) return Napi::Number::New(env, sampledBytesTotal);
    AddonContext* addon = unwrapContext(env, info[0]);
    auto it = sampledBytesByContext.find(addon);
    return Napi::Number::New(env, it == sampledBytesByContext.end() ? 0 : it->second);
}

// hostLogitBytes(context?) → bytes of logits readGreedy / readTop read on the host, for the context
// (or the process, without one).
Napi::Value HostLogitBytes(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    if (info.Length() < 1 || info[0].IsUndefined()) return Napi::Number::New(env, hostBytesTotal);
    AddonContext* addon = unwrapContext(env, info[0]);
    auto it = hostBytesByContext.find(addon);
    return Napi::Number::New(env, it == hostBytesByContext.end() ? 0 : it->second);
}

// argmax(logits: Float32Array) → firstArgmax of it: for tests of the tie and NaN rules without a model.
Napi::Value Argmax(const Napi::CallbackInfo& info) {
    auto logits = info[0].As<Napi::Float32Array>();
    return Napi::Number::New(info.Env(), firstArgmax(logits.Data(), static_cast<int32_t>(logits.ElementLength())));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    // The calling contract of this file: nativeAddon.ts refuses a build with another (a stale dist/ file).
    exports.Set("apiVersion", Napi::Number::New(env, 5));
    exports.Set("decode", Napi::Function::New(env, Decode));
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

NODE_API_MODULE(draftline_native, Init)
