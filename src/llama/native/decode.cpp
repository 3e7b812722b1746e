#include "decode.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace draftline {

namespace {

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
        // The library's wording for the same failures.
        const std::string problem = decodeAndFree(llama, addon->ctx, batch, [](int32_t r) { return "Eval has failed (llama_decode returned " + std::to_string(r) + ")"; });
        if (!problem.empty()) SetError(problem);
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

}  // namespace

std::string decodeAndFree(LlamaApi& llama, llama_context* ctx, llama_batch& batch, const std::function<std::string(int32_t)>& refused) {
    std::string problem;
    try {
        const int32_t r = llama.decode(ctx, batch);
        if (r == 1) problem = "could not find a KV slot for the batch (try reducing the size of the batch or increase the context)";
        else if (r != 0) problem = refused(r);
        else llama.synchronize(ctx);
    } catch (const std::exception& e) {
        problem = e.what();
    } catch (...) {
        problem = "Unknown error when calling \"llama_decode\"";
    }
    llama.batch_free(batch);
    return problem;
}

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

// timeSequenceCopy(context, source, destination, token, rounds) → { copyUs: number[], baselineUs: number[], refusedWith }
// A micro-benchmark of llama_memory_seq_cp on node-llama-cpp's context, which keeps one KV stream per
// sequence: between two streams seq_cp marks the destination's cells at once and copies the source's
// whole stream buffer at the next decode (llama-kv-cache.cpp, at its update). Each round empties the
// destination, copies the source to it, and asks llama_decode for one token that belongs to both
// sequences: llama.cpp performs the pending copy, then refuses the batch (a token of two sequences,
// "coupled", cannot be split with a stream per sequence), so the round times the copy and nothing of a
// forward pass. The baseline round is the same without the seq_cp. `refusedWith` is llama_decode's
// answer (non-zero: refused, as expected). Only for measurements (bench/kvBranches.ts): the library's
// sequence objects do not know of the copied cells.
Napi::Value TimeSequenceCopy(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 5 || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsNumber() || !info[4].IsNumber()) {
        throw Napi::TypeError::New(env, "timeSequenceCopy(context, source, destination, token, rounds)");
    }
    AddonContext* addon = unwrapContext(env, info[0]);
    const int32_t source = info[1].As<Napi::Number>().Int32Value();
    const int32_t destination = info[2].As<Napi::Number>().Int32Value();
    const int32_t token = info[3].As<Napi::Number>().Int32Value();
    const int32_t rounds = info[4].As<Napi::Number>().Int32Value();
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    if (!llama.get_memory || !llama.memory_seq_rm || !llama.memory_seq_cp || !llama.memory_seq_pos_max || !llama.batch_init || !llama.decode) throw Napi::Error::New(env, "libllama has no llama_memory_seq_cp or llama_decode");
    const uint32_t sequences = addon->context_params.n_seq_max;
    if (source < 0 || destination < 0 || static_cast<uint32_t>(source) >= sequences || static_cast<uint32_t>(destination) >= sequences || source == destination) {
        throw Napi::RangeError::New(env, "timeSequenceCopy: two different sequences of the context");
    }
    if (rounds < 1 || rounds > 1000) throw Napi::RangeError::New(env, "timeSequenceCopy: 1 to 1000 rounds");
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    if (token < 0 || token >= llama.vocab_n_tokens(llama.model_get_vocab(llama.get_model(ctx)))) throw Napi::RangeError::New(env, "timeSequenceCopy: the token is not in the vocabulary");
    llama_memory_t memory = llama.get_memory(ctx);
    const llama_pos next = llama.memory_seq_pos_max(memory, source) + 1;
    if (next < 1) throw Napi::Error::New(env, "timeSequenceCopy: the source sequence is empty");
    llama_batch batch = llama.batch_init(1, 0, 2);
    batch.n_tokens = 1;
    batch.token[0] = token;
    batch.pos[0] = next;
    batch.n_seq_id[0] = 2;
    batch.seq_id[0][0] = destination;
    batch.seq_id[0][1] = source;
    batch.logits[0] = 1;
    Napi::Array copyUs = Napi::Array::New(env, rounds);
    Napi::Array baselineUs = Napi::Array::New(env, rounds);
    int32_t refusedWith = 0;
    for (int32_t r = 0; r < rounds; r++) {
        for (int copy = 0; copy < 2; copy++) {
            const auto start = std::chrono::steady_clock::now();
            llama.memory_seq_rm(memory, destination, -1, -1);
            if (copy) llama.memory_seq_cp(memory, source, destination, -1, -1);
            else llama.memory_seq_cp(memory, source, source, -1, -1);
            refusedWith = llama.decode(ctx, batch);
            const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
            (copy ? copyUs : baselineUs).Set(static_cast<uint32_t>(r), us);
        }
    }
    llama.memory_seq_rm(memory, destination, -1, -1);
    llama.batch_free(batch);
    Napi::Object result = Napi::Object::New(env);
    result.Set("copyUs", copyUs);
    result.Set("baselineUs", baselineUs);
    result.Set("refusedWith", refusedWith);
    return result;
}

}  // namespace draftline
