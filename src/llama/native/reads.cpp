#include "reads.h"

#include <cmath>
#include <string>

#include "deviceGreedy.h"
#include "transfers.h"
#include "unified.h"

namespace draftline {

namespace {

// The first index of the largest logit, exactly as llama.cpp's greedy sampler picks it (a `>` scan
// from index 0, so NaNs are never picked unless at index 0). In two passes so the first vectorizes:
// the largest value over 8 independent lanes (`x > m ? x : m` is maxps, with the same NaN rule),
// then the first index holding it: several times faster than a scalar scan on a large vocabulary.
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

// Runs `read(ctx, key)` on the llama context `target` names, held for the read: node-llama-cpp's
// context object (its disposeMutex, which its dispose takes before freeing the llama context; the
// device greedy chains' mutex; and the library's sampling lock, where its version has one: see
// SamplingLock), or the handle of a Draftline context (UnifiedHold). `key` is what the bytes read
// are counted under (transfers.h).
template <typename Read>
auto withReadContext(Napi::Env env, Napi::Value target, int32_t sequence, Read&& read) {
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    if (isUnifiedHandle(target)) {
        std::shared_ptr<UnifiedContext> unified = lookupUnified(env, target);
        UnifiedHold hold(env, *unified);
        return read(hold.ctx(), static_cast<const void*>(unified.get()));
    }
    AddonContext* addon = unwrapContext(env, target);
    std::lock_guard<std::mutex> attaching(deviceGreedyMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    refuseIfDeviceGreedy(env, addon, llama, sequence);
    SamplingLock<AddonContext> sampling(addon);
    return read(ctx, static_cast<const void*>(addon));
}

}  // namespace

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
    if (!info[1].IsTypedArray() || !info[3].IsTypedArray() || !info[6].IsTypedArray() || !info[7].IsTypedArray()) throw Napi::TypeError::New(env, "readGreedy: typed arrays expected");
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
    return withReadContext(env, info[0], sequence, [&](llama_context* ctx, const void* key) {
        LlamaApi& llama = api();
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
        countHostBytes(key, read, vocabularySize);
        return Napi::Number::New(env, read);
    });
}

// readTop(context, batchIndexes: Int32Array, count, top, outTokens: Int32Array, outLogits: Float32Array,
//         sequenceId = -1) → positions read (count)
// The `top` highest logits of each position, best first, into outTokens/outLogits[j * top + r]: what
// alternative completions branch on (read only when the user asks for them). Ties go to the lower
// token id, so rank 0 is the greedy token exactly as readGreedy (and llama.cpp's greedy sampler) picks
// it; NaN logits are never ranked. One pass a position, inserting into a short sorted list: no copy
// and no sort of the vocabulary (node-llama-cpp's probabilities sort all of it at every position).
Napi::Value ReadTop(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 6) throw Napi::TypeError::New(env, "readTop(context, batchIndexes, count, top, outTokens, outLogits)");
    if (!info[1].IsTypedArray() || !info[4].IsTypedArray() || !info[5].IsTypedArray()) throw Napi::TypeError::New(env, "readTop: typed arrays expected");
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
    return withReadContext(env, info[0], sequence, [&](llama_context* ctx, const void* key) {
        LlamaApi& llama = api();
        const int32_t vocabularySize = llama.vocab_n_tokens(llama.model_get_vocab(llama.get_model(ctx)));
        countHostBytes(key, count, vocabularySize);
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
    });
}

// argmax(logits: Float32Array) → firstArgmax of it: for tests of the tie and NaN rules without a model.
Napi::Value Argmax(const Napi::CallbackInfo& info) {
    auto logits = info[0].As<Napi::Float32Array>();
    return Napi::Number::New(info.Env(), firstArgmax(logits.Data(), static_cast<int32_t>(logits.ElementLength())));
}

}  // namespace draftline
