#include "decode.h"

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

}  // namespace

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

// copySequence(context, source, destination) → true. The destination sequence of node-llama-cpp's
// context emptied, then given the source's cells (llama_memory_seq_cp of the whole sequence). In a
// context with a KV stream per sequence (node-llama-cpp's) that copies the source's whole stream
// buffer at the next decode: what branches in sequences of their own would pay for every copied
// prefix (bench/kvBranches.ts measures it). Only for measurements: the library's sequence objects do
// not know of the copied cells.
Napi::Value CopySequence(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[1].IsNumber() || !info[2].IsNumber()) throw Napi::TypeError::New(env, "copySequence(context, source, destination)");
    AddonContext* addon = unwrapContext(env, info[0]);
    const int32_t source = info[1].As<Napi::Number>().Int32Value();
    const int32_t destination = info[2].As<Napi::Number>().Int32Value();
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    if (!llama.get_memory || !llama.memory_seq_rm || !llama.memory_seq_cp) throw Napi::Error::New(env, "libllama has no llama_memory_seq_cp");
    const uint32_t sequences = addon->context_params.n_seq_max;
    if (source < 0 || destination < 0 || static_cast<uint32_t>(source) >= sequences || static_cast<uint32_t>(destination) >= sequences || source == destination) {
        throw Napi::RangeError::New(env, "copySequence: two different sequences of the context");
    }
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_memory_t memory = llama.get_memory(liveContext(env, addon));
    llama.memory_seq_rm(memory, destination, -1, -1);
    llama.memory_seq_cp(memory, source, destination, -1, -1);
    return Napi::Boolean::New(env, true);
}

}  // namespace draftline
