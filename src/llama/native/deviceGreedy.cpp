#include "deviceGreedy.h"

#include <string>
#include <vector>

#include "transfers.h"

namespace draftline {

// Device greedy: a greedy sampler chain attached to a sequence with llama.cpp's backend sampling
// [EXPERIMENTAL] (llama_set_sampler): the argmax of every output row runs on the device in the decode's
// own graph (ggml_argmax) and only the sampled token comes back to the host (4 bytes a position instead
// of a whole row of logits). Once every output of a batch belongs to a sequence with a sampler,
// llama.cpp stops copying the raw logits to the host (needs_raw_logits): llama_get_logits_ith then
// returns the rows of an older batch, so readGreedy / readTop refuse a context with a chain attached.
// Chains are ours (llama.cpp only borrows them) and kept while attached: one per (context, sequence).
// A chain is never attached twice (llama.cpp asserts when a chain's backend is initialised twice):
// every attach makes a new one. Each entry remembers the llama_context it was attached to: an entry
// whose AddonContext now holds another (or none) outlived its llama context and is only freed.
//
// Two chains. `argmax`: llama.cpp's greedy sampler (ggml_argmax). Its sampled token comes back, but
// the greedy sampler leaves the row's logits as the chain's output logits, so llama.cpp still copies
// the whole row to the host (into its sampled-logits buffer): no transfer saved, only the host's
// argmax; and ggml_argmax keeps the LAST of equal logits (CPU and Vulkan), where llama.cpp's
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

namespace {

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

}  // namespace

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
// cannot be: the context then reads its logits on the host.
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
    countSampledBytes(addon, shipped);
    return Napi::Number::New(env, read);
}

}  // namespace draftline
