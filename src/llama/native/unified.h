// Draftline's own llama.cpp contexts, made on a model node-llama-cpp loaded, with ONE KV stream for
// all their sequences (kv_unified): a KV cell there may belong to several sequences, so one batch can
// hold a token tree whose branches share their ancestors' cells (tree verification). node-llama-cpp
// makes every context with a stream per sequence, where llama.cpp refuses a token that belongs to
// several sequences. unified.cpp makes and frees them; unifiedOps.cpp decodes on them and runs their
// memory and state operations. JS holds a context by a number (its handle), looked up here: an
// unknown or freed handle is an error, never a dangling pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "binding.h"

namespace draftline {

struct UnifiedContext {
    // Held by every operation on the context: a decode on its worker thread, and the synchronous
    // reads and memory operations, which refuse (rather than wait) while a decode holds it.
    std::mutex mutex;
    llama_context* ctx = nullptr;
    AddonModel* model = nullptr;
    ggml_threadpool* pool = nullptr;
    uint32_t sequences = 0;
    uint32_t batchSize = 0;
    uint32_t contextCells = 0;
    int32_t vocabularySize = 0;
    bool freed = false;
};

// The context behind a handle; throws for a value that is not the handle of a live context.
std::shared_ptr<UnifiedContext> lookupUnified(Napi::Env env, Napi::Value handle);

// Whether `value` names a unified context (a handle), rather than node-llama-cpp's context object.
inline bool isUnifiedHandle(Napi::Value value) {
    return value.IsNumber();
}

// A synchronous operation's hold on a context: throws when it was freed, when its model was, or
// while a decode runs on it (the caller's lock should have kept them apart).
class UnifiedHold {
   public:
    UnifiedHold(Napi::Env env, UnifiedContext& context);
    llama_context* ctx() const { return context.ctx; }

   private:
    UnifiedContext& context;
    std::unique_lock<std::mutex> lock;
    std::unique_lock<std::mutex> modelLock;
};

// Under the context's mutex: an empty string when the context and its model are alive, else why not.
// Takes the model's disposeMutex into `modelLock` (node-llama-cpp frees the model under it).
std::string unifiedProblem(UnifiedContext& context, std::unique_lock<std::mutex>& modelLock);

Napi::Value CreateUnified(const Napi::CallbackInfo& info);
Napi::Value FreeUnified(const Napi::CallbackInfo& info);

}  // namespace draftline
