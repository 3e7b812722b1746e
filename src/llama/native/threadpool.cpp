#include "threadpool.h"

#include <mutex>
#include <unordered_map>

namespace draftline {

namespace {

// Persistent CPU threadpools, one per context that asked. Without one, llama.cpp (built without
// OpenMP, as node-llama-cpp's prebuilt binaries are) creates and joins its worker threads for every
// graph it computes: with 2+ threads that is every decode step.
std::mutex poolsMutex;
std::unordered_map<AddonContext*, ggml_threadpool*> pools;

struct ThreadpoolApi {
    decltype(&ggml_threadpool_new) create = nullptr;
    decltype(&ggml_threadpool_free) free = nullptr;
};

// The CPU backend's threadpool functions, or why they cannot be had (in `error`).
bool threadpoolApi(ThreadpoolApi& t, std::string& error) {
    LlamaApi& llama = api();
    if (!llama.loaded) {
        error = llama.error;
        return false;
    }
    if (!llama.attach_threadpool || !llama.threadpool_params_default || !llama.backend_dev_by_type || !llama.backend_dev_backend_reg ||
        !llama.backend_reg_get_proc_address) {
        error = "this llama.cpp has no threadpool API";
        return false;
    }
    ggml_backend_dev_t cpu = llama.backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr) {
        error = "no CPU backend is loaded";
        return false;
    }
    ggml_backend_reg_t reg = llama.backend_dev_backend_reg(cpu);
    t.create = reinterpret_cast<decltype(&ggml_threadpool_new)>(llama.backend_reg_get_proc_address(reg, "ggml_threadpool_new"));
    t.free = reinterpret_cast<decltype(&ggml_threadpool_free)>(llama.backend_reg_get_proc_address(reg, "ggml_threadpool_free"));
    if (!t.create || !t.free) {
        error = "the CPU backend has no threadpool functions";
        return false;
    }
    return true;
}

}  // namespace

ggml_threadpool* attachNewThreadpool(llama_context* ctx, int32_t threads, uint32_t poll, std::string& error) {
    ThreadpoolApi t;
    if (!threadpoolApi(t, error)) return nullptr;
    ggml_threadpool_params params = api().threadpool_params_default(threads);
    params.poll = poll;
    ggml_threadpool* pool = t.create(&params);
    if (pool == nullptr) {
        error = "llama.cpp could not create a threadpool";
        return nullptr;
    }
    api().attach_threadpool(ctx, pool, pool);
    return pool;
}

void freeThreadpool(ggml_threadpool* pool) {
    ThreadpoolApi t;
    std::string error;
    // A pool was made, so the functions were found: they are found again.
    if (pool != nullptr && threadpoolApi(t, error)) t.free(pool);
}

// attachThreadpool(context, threads, poll) → true. Call before the context's first decode and never
// while one runs; releaseThreadpool once the context is disposed.
Napi::Value AttachThreadpool(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    AddonContext* addon = unwrapContext(env, info[0]);
    const int32_t threads = info[1].As<Napi::Number>().Int32Value();
    const uint32_t poll = info[2].As<Napi::Number>().Uint32Value();
    if (threads < 1 || threads > GGML_MAX_N_THREADS) throw Napi::RangeError::New(env, "threads out of range");
    std::lock_guard<std::mutex> lock(poolsMutex);
    std::lock_guard<std::mutex> disposing(addon->disposeMutex);
    llama_context* ctx = liveContext(env, addon);
    if (pools.count(addon)) throw Napi::Error::New(env, "the context already has a threadpool");
    std::string error;
    ggml_threadpool* pool = attachNewThreadpool(ctx, threads, poll, error);
    if (pool == nullptr) throw Napi::Error::New(env, error);
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
    freeThreadpool(it->second);
    pools.erase(it);
    return Napi::Boolean::New(env, true);
}

}  // namespace draftline
