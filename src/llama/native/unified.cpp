#include "unified.h"

#include <string>
#include <unordered_map>

#include "threadpool.h"

namespace draftline {

namespace {

struct Entry {
    std::shared_ptr<UnifiedContext> context;
    // node-llama-cpp's model object, kept from garbage collection while the context uses its model.
    Napi::ObjectReference model;
};

// Handles are never reused: a stale one finds nothing.
std::mutex registryMutex;
std::unordered_map<int32_t, Entry> registry;
int32_t nextHandle = 1;

// The sizes a context is asked for, checked before anything is made.
struct UnifiedRequest {
    uint32_t contextCells = 0;
    uint32_t batchSize = 0;
    uint32_t sequences = 0;
    int32_t threads = 1;
    uint32_t poll = 0;
    bool threadpool = true;
    llama_flash_attn_type flashAttention = LLAMA_FLASH_ATTN_TYPE_AUTO;
};

// createUnified's work off the main thread: llama_init_from_model allocates the KV cache and reserves
// the compute graphs (seconds for a large model on a GPU).
class CreateWorker : public Napi::AsyncWorker {
   public:
    CreateWorker(Napi::Env env, AddonModel* model, Napi::Object modelObject, UnifiedRequest request)
        : Napi::AsyncWorker(env, "DraftlineCreateUnified"), request(request), deferred(Napi::Promise::Deferred::New(env)) {
        context->model = model;
        modelRef = Napi::Persistent(modelObject);
    }
    Napi::Promise promise() { return deferred.Promise(); }

   protected:
    void Execute() override {
        LlamaApi& llama = api();
        AddonModel* model = context->model;
        std::lock_guard<std::mutex> modelLock(model->disposeMutex);
        if (model->disposed || model->memoryDisposed || !model->modelLoaded || model->model == nullptr) {
            SetError("the model is disposed or not loaded");
            return;
        }
        // Tree verification cuts and joins cells freely: a plain attention cache only.
        if (llama.model_is_recurrent(model->model) || llama.model_is_hybrid(model->model) || llama.model_n_swa(model->model) > 0) {
            SetError("the model's memory is not a plain KV cache (recurrent, hybrid or sliding-window attention)");
            return;
        }
        // As node-llama-cpp's AddonContext sets them for a context (its constructor), but one KV
        // stream for all sequences.
        llama_context_params params = llama.context_default_params();
        params.n_ctx = request.contextCells;
        params.n_batch = request.batchSize;
        params.n_ubatch = request.batchSize;
        params.n_seq_max = request.sequences;
        params.n_threads = request.threads;
        params.n_threads_batch = request.threads;
        params.flash_attn_type = request.flashAttention;
        params.no_perf = true;
        params.swa_full = false;
        params.kv_unified = true;
        try {
            context->ctx = llama.init_from_model(model->model, params);
        } catch (const std::exception& e) {
            SetError(std::string("llama_init_from_model failed: ") + e.what());
            return;
        } catch (...) {
            SetError("llama_init_from_model failed");
            return;
        }
        if (context->ctx == nullptr) {
            SetError("llama.cpp could not create the context (llama_init_from_model returned nothing)");
            return;
        }
        if (llama.n_seq_max(context->ctx) != request.sequences || llama.n_batch(context->ctx) != request.batchSize || llama.n_ctx(context->ctx) < request.contextCells) {
            llama.free(context->ctx);
            context->ctx = nullptr;
            SetError("llama.cpp made the context with other sizes than asked for");
            return;
        }
        context->sequences = request.sequences;
        context->batchSize = request.batchSize;
        context->contextCells = llama.n_ctx(context->ctx);
        context->vocabularySize = llama.vocab_n_tokens(llama.model_get_vocab(model->model));
        if (!request.threadpool) {
            threadpoolProblem = "not asked for";
        } else if (request.threads >= 2) {
            context->pool = attachNewThreadpool(context->ctx, request.threads, request.poll, threadpoolProblem);
        } else {
            threadpoolProblem = "one thread: no workers to keep";
        }
    }
    void OnOK() override {
        Napi::Env env = Env();
        int32_t handle;
        {
            std::lock_guard<std::mutex> lock(registryMutex);
            handle = nextHandle++;
            registry[handle] = Entry{context, std::move(modelRef)};
        }
        Napi::Object result = Napi::Object::New(env);
        result.Set("handle", handle);
        result.Set("contextCells", context->contextCells);
        result.Set("batchSize", context->batchSize);
        result.Set("sequences", context->sequences);
        result.Set("vocabularySize", context->vocabularySize);
        result.Set("threadpool", context->pool != nullptr);
        if (context->pool == nullptr) result.Set("threadpoolProblem", threadpoolProblem);
        deferred.Resolve(result);
    }
    void OnError(const Napi::Error& error) override {
        modelRef.Reset();
        deferred.Reject(error.Value());
    }

   private:
    std::shared_ptr<UnifiedContext> context = std::make_shared<UnifiedContext>();
    Napi::ObjectReference modelRef;
    UnifiedRequest request;
    std::string threadpoolProblem;
    Napi::Promise::Deferred deferred;
};

uint32_t positiveOption(Napi::Env env, Napi::Object options, const char* name, uint32_t max) {
    Napi::Value value = options.Get(name);
    if (!value.IsNumber()) throw Napi::TypeError::New(env, std::string("createUnified: ") + name + " must be a number");
    const double n = value.As<Napi::Number>().DoubleValue();
    if (!(n >= 1 && n <= max) || n != static_cast<double>(static_cast<uint32_t>(n))) {
        throw Napi::RangeError::New(env, std::string("createUnified: ") + name + " out of range (1.." + std::to_string(max) + ")");
    }
    return static_cast<uint32_t>(n);
}

}  // namespace

std::shared_ptr<UnifiedContext> lookupUnified(Napi::Env env, Napi::Value handle) {
    if (!handle.IsNumber()) throw Napi::TypeError::New(env, "expected the handle of a Draftline context");
    const int32_t id = handle.As<Napi::Number>().Int32Value();
    std::lock_guard<std::mutex> lock(registryMutex);
    auto it = registry.find(id);
    if (it == registry.end()) throw Napi::Error::New(env, "no such Draftline context (freed, or never made)");
    return it->second.context;
}

std::string unifiedProblem(UnifiedContext& context, std::unique_lock<std::mutex>& modelLock) {
    if (context.freed || context.ctx == nullptr) return "the Draftline context was freed";
    modelLock = std::unique_lock<std::mutex>(context.model->disposeMutex);
    if (context.model->memoryDisposed || context.model->model == nullptr) return "the context's model was disposed";
    return "";
}

UnifiedHold::UnifiedHold(Napi::Env env, UnifiedContext& context) : context(context), lock(context.mutex, std::try_to_lock) {
    if (!lock.owns_lock()) throw Napi::Error::New(env, "a decode is running on this context (operations on a context must wait for it)");
    const std::string problem = unifiedProblem(context, modelLock);
    if (!problem.empty()) throw Napi::Error::New(env, problem);
}

// createUnified(model, { contextCells, batchSize, sequences, threads, flashAttention: 'auto' | boolean,
//               gpuLayers, poll?, threadpool? }) → Promise<{ handle, contextCells, batchSize, sequences,
//               vocabularySize, threadpool, threadpoolProblem? }>
// `model` is node-llama-cpp's native model object (`LlamaModel._model`); `gpuLayers` what the JS side
// knows the model was loaded with, checked against the object before anything it points to is read;
// `threadpool` false: llama.cpp's own threads (a persistent pool by default with 2+ threads).
Napi::Value CreateUnified(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "createUnified(model, options)");
    AddonModel* model = unwrapModel(env, info[0]);
    Napi::Object options = info[1].As<Napi::Object>();
    LlamaApi& llama = api();
    if (!llama.loaded) throw Napi::Error::New(env, llama.error);
    std::string missing;
    if (!hasUnifiedApi(llama, missing)) throw Napi::Error::New(env, "libllama has no " + missing);
    UnifiedRequest request;
    request.contextCells = positiveOption(env, options, "contextCells", 1u << 24);
    request.batchSize = positiveOption(env, options, "batchSize", 1u << 16);
    // llama.cpp's limit on sequence ids (LLAMA_MAX_SEQ).
    request.sequences = positiveOption(env, options, "sequences", 256);
    request.threads = static_cast<int32_t>(positiveOption(env, options, "threads", GGML_MAX_N_THREADS));
    if (options.Has("poll") && options.Get("poll").IsNumber()) request.poll = options.Get("poll").As<Napi::Number>().Uint32Value();
    if (options.Has("threadpool") && options.Get("threadpool").IsBoolean()) request.threadpool = options.Get("threadpool").As<Napi::Boolean>().Value();
    Napi::Value flash = options.Get("flashAttention");
    if (flash.IsBoolean()) request.flashAttention = flash.As<Napi::Boolean>().Value() ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    else if (!(flash.IsString() && flash.As<Napi::String>().Utf8Value() == "auto")) throw Napi::TypeError::New(env, "createUnified: flashAttention is 'auto' or a boolean");
    if (!options.Get("gpuLayers").IsNumber()) throw Napi::TypeError::New(env, "createUnified: gpuLayers must be a number");
    const int32_t gpuLayers = options.Get("gpuLayers").As<Napi::Number>().Int32Value();
    {
        std::lock_guard<std::mutex> modelLock(model->disposeMutex);
        // The layout check: a field the JS side knows, read from where the header says it is.
        if (model->model_params.n_gpu_layers != gpuLayers) {
            throw Napi::Error::New(env, "the native model's layout differs from the header this addon was built against (GPU layers do not match)");
        }
        if (model->disposed || model->memoryDisposed || !model->modelLoaded || model->model == nullptr) throw Napi::Error::New(env, "the model is disposed or not loaded");
    }
    auto* worker = new CreateWorker(env, model, info[0].As<Napi::Object>(), request);
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
}

// freeUnified(handle) → whether it freed a context (false: unknown or already freed). Waits for a
// decode in flight; the handle is unknown from then on.
Napi::Value FreeUnified(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "freeUnified(handle)");
    const int32_t id = info[0].As<Napi::Number>().Int32Value();
    Entry entry;
    {
        std::lock_guard<std::mutex> lock(registryMutex);
        auto it = registry.find(id);
        if (it == registry.end()) return Napi::Boolean::New(env, false);
        entry = std::move(it->second);
        registry.erase(it);
    }
    {
        std::lock_guard<std::mutex> lock(entry.context->mutex);
        UnifiedContext& context = *entry.context;
        std::lock_guard<std::mutex> modelLock(context.model->disposeMutex);
        // A model freed first (the JS side frees its contexts before: this is a safety net) leaves the
        // context allocated: freeing it then could touch the freed model.
        if (!context.freed && context.ctx != nullptr && !context.model->memoryDisposed) {
            api().free(context.ctx);
            // After the context: llama.cpp's CPU backend holds on to its last threadpool until then.
            freeThreadpool(context.pool);
        }
        context.ctx = nullptr;
        context.pool = nullptr;
        context.freed = true;
    }
    entry.model.Reset();
    return Napi::Boolean::New(env, true);
}

}  // namespace draftline
