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

}  // namespace

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

}  // namespace draftline
