#include "unifiedOps.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "decode.h"
#include "unified.h"

namespace draftline {

namespace {

// A batch whose tokens may each belong to several sequences: token i at positions[i], in sequences
// seqIds[offsets[i] .. offsets[i] + counts[i]), its logits kept when outputs[i].
struct MultiBatch {
    std::vector<llama_token> tokens;
    std::vector<llama_pos> positions;
    std::vector<int32_t> counts;
    std::vector<llama_seq_id> seqIds;
    std::vector<int8_t> outputs;
    int32_t widest = 1;
};

// unifiedDecode's work on a libuv worker thread, as node-llama-cpp's decodeBatch: the context's mutex
// held throughout (the JS side's lock keeps every other operation away; this keeps a stray one out).
class UnifiedDecodeWorker : public Napi::AsyncWorker {
   public:
    UnifiedDecodeWorker(Napi::Env env, std::shared_ptr<UnifiedContext> context, MultiBatch batch)
        : Napi::AsyncWorker(env, "DraftlineUnifiedDecode"), context(std::move(context)), input(std::move(batch)), deferred(Napi::Promise::Deferred::New(env)) {}
    Napi::Promise promise() { return deferred.Promise(); }

   protected:
    void Execute() override {
        LlamaApi& llama = api();
        std::lock_guard<std::mutex> lock(context->mutex);
        std::unique_lock<std::mutex> modelLock;
        const std::string problem = unifiedProblem(*context, modelLock);
        if (!problem.empty()) {
            SetError(problem);
            return;
        }
        const int32_t n = static_cast<int32_t>(input.tokens.size());
        llama_batch batch = llama.batch_init(n, 0, input.widest);
        size_t at = 0;
        for (int32_t i = 0; i < n; i++) {
            batch.token[i] = input.tokens[i];
            batch.pos[i] = input.positions[i];
            batch.n_seq_id[i] = input.counts[i];
            for (int32_t s = 0; s < input.counts[i]; s++) batch.seq_id[i][s] = input.seqIds[at++];
            batch.logits[i] = input.outputs[i];
        }
        batch.n_tokens = n;
        const std::string failed = decodeAndFree(llama, context->ctx, batch, [](int32_t r) { return "llama_decode refused the batch (returned " + std::to_string(r) + "; llama.cpp's log says why)"; });
        if (!failed.empty()) SetError(failed);
    }
    void OnOK() override { deferred.Resolve(Env().Undefined()); }
    void OnError(const Napi::Error& error) override { deferred.Reject(error.Value()); }

   private:
    std::shared_ptr<UnifiedContext> context;
    MultiBatch input;
    Napi::Promise::Deferred deferred;
};

// A sequence id of the context, or a RangeError.
llama_seq_id sequenceArg(Napi::Env env, const UnifiedContext& context, Napi::Value value, const char* what) {
    if (!value.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + ": the sequence must be a number");
    const int32_t seq = value.As<Napi::Number>().Int32Value();
    if (seq < 0 || static_cast<uint32_t>(seq) >= context.sequences) {
        throw Napi::RangeError::New(env, std::string(what) + ": no sequence " + std::to_string(seq) + " (the context has " + std::to_string(context.sequences) + ")");
    }
    return seq;
}

// A position bound: -1 for an open end, else 0 or more.
llama_pos positionArg(Napi::Env env, Napi::Value value, const char* what) {
    if (!value.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + ": positions must be numbers");
    const int32_t p = value.As<Napi::Number>().Int32Value();
    if (p < -1) throw Napi::RangeError::New(env, std::string(what) + ": a position is -1 (open) or 0 and more");
    return p;
}

// saveState / loadState's work off the main thread: a sequence's cells to or from a file.
class StateWorker : public Napi::AsyncWorker {
   public:
    StateWorker(Napi::Env env, std::shared_ptr<UnifiedContext> context, llama_seq_id seq, std::string file, std::vector<llama_token> tokens, size_t capacity, bool saving)
        : Napi::AsyncWorker(env, "DraftlineUnifiedState"),
          context(std::move(context)),
          seq(seq),
          file(std::move(file)),
          tokens(std::move(tokens)),
          capacity(capacity),
          saving(saving),
          deferred(Napi::Promise::Deferred::New(env)) {}
    Napi::Promise promise() { return deferred.Promise(); }

   protected:
    void Execute() override {
        LlamaApi& llama = api();
        std::lock_guard<std::mutex> lock(context->mutex);
        std::unique_lock<std::mutex> modelLock;
        const std::string problem = unifiedProblem(*context, modelLock);
        if (!problem.empty()) {
            SetError(problem);
            return;
        }
        try {
            if (saving) {
                bytes = llama.state_seq_save_file(context->ctx, file.c_str(), seq, tokens.data(), tokens.size());
                if (bytes == 0) SetError("llama.cpp could not save the sequence's state to " + file);
                return;
            }
            tokens.resize(capacity);
            size_t count = 0;
            bytes = llama.state_seq_load_file(context->ctx, file.c_str(), seq, tokens.data(), capacity, &count);
            if (bytes == 0) {
                llama.memory_seq_rm(llama.get_memory(context->ctx), seq, -1, -1);
                SetError("llama.cpp could not load the sequence's state from " + file);
                return;
            }
            tokens.resize(count);
        } catch (const std::exception& e) {
            llama.memory_seq_rm(llama.get_memory(context->ctx), seq, -1, -1);
            SetError(std::string("the state file could not be read: ") + e.what());
        }
    }
    void OnOK() override {
        Napi::Env env = Env();
        if (saving) {
            deferred.Resolve(Napi::Number::New(env, static_cast<double>(bytes)));
            return;
        }
        Napi::Int32Array out = Napi::Int32Array::New(env, tokens.size());
        std::copy(tokens.begin(), tokens.end(), out.Data());
        deferred.Resolve(out);
    }
    void OnError(const Napi::Error& error) override { deferred.Reject(error.Value()); }

   private:
    std::shared_ptr<UnifiedContext> context;
    llama_seq_id seq;
    std::string file;
    std::vector<llama_token> tokens;
    size_t capacity;
    bool saving;
    size_t bytes = 0;
    Napi::Promise::Deferred deferred;
};

}  // namespace

// unifiedDecode(handle, tokens: Int32Array, positions: Int32Array, seqCounts: Int32Array,
//               seqIds: Int32Array, outputs: Uint8Array) → Promise<void>
// Token i at positions[i] in the seqCounts[i] sequences that follow in seqIds (in token order);
// outputs[i] non-zero keeps its logits, read by readGreedy / readTop with batch index i. Everything is
// checked here, so that llama.cpp never sees an id, token or size it would abort on.
Napi::Value UnifiedDecode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 6) throw Napi::TypeError::New(env, "unifiedDecode(handle, tokens, positions, seqCounts, seqIds, outputs)");
    std::shared_ptr<UnifiedContext> context = lookupUnified(env, info[0]);
    if (!info[1].IsTypedArray() || !info[2].IsTypedArray() || !info[3].IsTypedArray() || !info[4].IsTypedArray() || !info[5].IsTypedArray()) {
        throw Napi::TypeError::New(env, "unifiedDecode: tokens, positions, seqCounts and seqIds are Int32Arrays, outputs a Uint8Array");
    }
    auto tokens = info[1].As<Napi::Int32Array>();
    auto positions = info[2].As<Napi::Int32Array>();
    auto counts = info[3].As<Napi::Int32Array>();
    auto seqIds = info[4].As<Napi::Int32Array>();
    auto outputs = info[5].As<Napi::Uint8Array>();
    const size_t n = tokens.ElementLength();
    if (n == 0 || n > context->batchSize) throw Napi::RangeError::New(env, "unifiedDecode: the batch is empty or larger than the context's batch size");
    if (positions.ElementLength() != n || counts.ElementLength() != n || outputs.ElementLength() != n) throw Napi::RangeError::New(env, "unifiedDecode: arrays of different lengths");
    MultiBatch batch;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= context->vocabularySize) throw Napi::RangeError::New(env, "unifiedDecode: token " + std::to_string(tokens[i]) + " is not in the vocabulary");
        if (positions[i] < 0) throw Napi::RangeError::New(env, "unifiedDecode: a negative position");
        if (counts[i] < 1 || static_cast<uint32_t>(counts[i]) > context->sequences) throw Napi::RangeError::New(env, "unifiedDecode: every token belongs to 1 to `sequences` sequences");
        if (at + counts[i] > seqIds.ElementLength()) throw Napi::RangeError::New(env, "unifiedDecode: seqIds is shorter than the counts");
        for (int32_t s = 0; s < counts[i]; s++, at++) {
            if (seqIds[at] < 0 || static_cast<uint32_t>(seqIds[at]) >= context->sequences) throw Napi::RangeError::New(env, "unifiedDecode: no sequence " + std::to_string(seqIds[at]));
            batch.seqIds.push_back(seqIds[at]);
        }
        batch.widest = std::max(batch.widest, counts[i]);
        batch.tokens.push_back(tokens[i]);
        batch.positions.push_back(positions[i]);
        batch.counts.push_back(counts[i]);
        batch.outputs.push_back(outputs[i] != 0 ? 1 : 0);
    }
    if (at != seqIds.ElementLength()) throw Napi::RangeError::New(env, "unifiedDecode: seqIds is longer than the counts");
    auto* worker = new UnifiedDecodeWorker(env, std::move(context), std::move(batch));
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
}

// unifiedMemory(handle, op, seq, p0, p1, other) → the operation's result. op: 'remove' (seq_rm of
// [p0, p1) → whether llama.cpp removed it), 'copy' (seq_cp from seq to `other` over [p0, p1)),
// 'shift' (seq_add of `other` to the positions [p0, p1): refused where the cache cannot shift, which
// llama.cpp would abort on at the next decode), 'positions' ([min, max], -1 when empty), 'stateBytes'
// (the bytes a state file of the sequence holds: what its cells take, so equal counts give equal sizes).
Napi::Value UnifiedMemory(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[1].IsString()) throw Napi::TypeError::New(env, "unifiedMemory(handle, op, seq, p0, p1, other)");
    std::shared_ptr<UnifiedContext> context = lookupUnified(env, info[0]);
    const std::string op = info[1].As<Napi::String>().Utf8Value();
    if (op != "positions" && op != "stateBytes" && op != "remove" && op != "copy" && op != "shift") throw Napi::TypeError::New(env, "unifiedMemory: no operation " + op);
    const llama_seq_id seq = sequenceArg(env, *context, info[2], op.c_str());
    LlamaApi& llama = api();
    UnifiedHold hold(env, *context);
    llama_memory_t memory = llama.get_memory(hold.ctx());
    if (op == "positions") {
        Napi::Array out = Napi::Array::New(env, 2);
        out.Set(0u, llama.memory_seq_pos_min(memory, seq));
        out.Set(1u, llama.memory_seq_pos_max(memory, seq));
        return out;
    }
    if (op == "stateBytes") return Napi::Number::New(env, static_cast<double>(llama.state_seq_get_size(hold.ctx(), seq)));
    if (info.Length() < 5) throw Napi::TypeError::New(env, "unifiedMemory: " + op + " needs p0 and p1");
    const llama_pos p0 = positionArg(env, info[3], op.c_str());
    const llama_pos p1 = positionArg(env, info[4], op.c_str());
    if (op == "remove") return Napi::Boolean::New(env, llama.memory_seq_rm(memory, seq, p0, p1));
    if (info.Length() < 6 || !info[5].IsNumber()) throw Napi::TypeError::New(env, "unifiedMemory: " + op + " needs its sixth argument");
    if (op == "copy") {
        const llama_seq_id destination = sequenceArg(env, *context, info[5], "copy");
        llama.memory_seq_cp(memory, seq, destination, p0, p1);
        return env.Undefined();
    }
    if (op == "shift") {
        if (!llama.memory_can_shift(memory)) throw Napi::Error::New(env, "this model's KV cache cannot shift");
        llama.memory_seq_add(memory, seq, p0, p1, info[5].As<Napi::Number>().Int32Value());
        return env.Undefined();
    }
    throw Napi::TypeError::New(env, "unifiedMemory: no operation " + op);
}

// unifiedSaveState(handle, seq, file, tokens: Int32Array) → Promise<bytes written>
// unifiedLoadState(handle, seq, file, capacity) → Promise<Int32Array of the tokens the file holds>:
// the sequence's cells replaced by the file's (the caller empties it first); a file that does not
// load leaves the sequence empty and rejects.
Napi::Value UnifiedSaveState(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 4 || !info[2].IsString() || !info[3].IsTypedArray()) throw Napi::TypeError::New(env, "unifiedSaveState(handle, seq, file, tokens)");
    std::shared_ptr<UnifiedContext> context = lookupUnified(env, info[0]);
    const llama_seq_id seq = sequenceArg(env, *context, info[1], "unifiedSaveState");
    auto tokens = info[3].As<Napi::Int32Array>();
    std::vector<llama_token> copy(tokens.Data(), tokens.Data() + tokens.ElementLength());
    auto* worker = new StateWorker(env, std::move(context), seq, info[2].As<Napi::String>().Utf8Value(), std::move(copy), 0, true);
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
}

Napi::Value UnifiedLoadState(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 4 || !info[2].IsString() || !info[3].IsNumber()) throw Napi::TypeError::New(env, "unifiedLoadState(handle, seq, file, capacity)");
    std::shared_ptr<UnifiedContext> context = lookupUnified(env, info[0]);
    const llama_seq_id seq = sequenceArg(env, *context, info[1], "unifiedLoadState");
    const int32_t capacity = info[3].As<Napi::Number>().Int32Value();
    if (capacity < 0) throw Napi::RangeError::New(env, "unifiedLoadState: a negative capacity");
    auto* worker = new StateWorker(env, std::move(context), seq, info[2].As<Napi::String>().Utf8Value(), {}, static_cast<size_t>(capacity), false);
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
}

}  // namespace draftline
