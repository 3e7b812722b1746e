#include "binding.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <vector>

namespace draftline {

namespace {

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

}  // namespace

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
            bind(handle, "llama_get_sampled_probs_count_ith", instance.get_sampled_probs_count_ith, false, e) &&
            bind(handle, "llama_context_default_params", instance.context_default_params, false, e) &&
            bind(handle, "llama_init_from_model", instance.init_from_model, false, e) && bind(handle, "llama_free", instance.free, false, e) &&
            bind(handle, "llama_n_batch", instance.n_batch, false, e) && bind(handle, "llama_n_seq_max", instance.n_seq_max, false, e) &&
            bind(handle, "llama_model_is_recurrent", instance.model_is_recurrent, false, e) && bind(handle, "llama_model_is_hybrid", instance.model_is_hybrid, false, e) &&
            bind(handle, "llama_model_n_swa", instance.model_n_swa, false, e) && bind(handle, "llama_get_memory", instance.get_memory, false, e) &&
            bind(handle, "llama_memory_seq_rm", instance.memory_seq_rm, false, e) && bind(handle, "llama_memory_seq_cp", instance.memory_seq_cp, false, e) &&
            bind(handle, "llama_memory_seq_add", instance.memory_seq_add, false, e) && bind(handle, "llama_memory_seq_pos_min", instance.memory_seq_pos_min, false, e) &&
            bind(handle, "llama_memory_seq_pos_max", instance.memory_seq_pos_max, false, e) && bind(handle, "llama_memory_can_shift", instance.memory_can_shift, false, e) &&
            bind(handle, "llama_state_seq_get_size", instance.state_seq_get_size, false, e) &&
            bind(handle, "llama_state_seq_save_file", instance.state_seq_save_file, false, e) &&
            bind(handle, "llama_state_seq_load_file", instance.state_seq_load_file, false, e)) {
            instance.library = libraries[0];
            instance.loaded = true;
        }
    });
    return instance;
}

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

AddonModel* unwrapModel(Napi::Env env, Napi::Value value) {
    if (!value.IsObject()) throw Napi::TypeError::New(env, "expected node-llama-cpp's native model object");
    void* wrapped = nullptr;
    if (napi_unwrap(env, value, &wrapped) != napi_ok || wrapped == nullptr) {
        throw Napi::TypeError::New(env, "the object is not a wrapped native model");
    }
    return static_cast<AddonModel*>(wrapped);
}

bool hasUnifiedApi(LlamaApi& llama, std::string& missing) {
    const std::pair<const void*, const char*> needed[] = {
        {reinterpret_cast<const void*>(llama.context_default_params), "llama_context_default_params"},
        {reinterpret_cast<const void*>(llama.init_from_model), "llama_init_from_model"},
        {reinterpret_cast<const void*>(llama.free), "llama_free"},
        {reinterpret_cast<const void*>(llama.n_batch), "llama_n_batch"},
        {reinterpret_cast<const void*>(llama.n_seq_max), "llama_n_seq_max"},
        {reinterpret_cast<const void*>(llama.model_is_recurrent), "llama_model_is_recurrent"},
        {reinterpret_cast<const void*>(llama.model_is_hybrid), "llama_model_is_hybrid"},
        {reinterpret_cast<const void*>(llama.model_n_swa), "llama_model_n_swa"},
        {reinterpret_cast<const void*>(llama.get_memory), "llama_get_memory"},
        {reinterpret_cast<const void*>(llama.memory_seq_rm), "llama_memory_seq_rm"},
        {reinterpret_cast<const void*>(llama.memory_seq_cp), "llama_memory_seq_cp"},
        {reinterpret_cast<const void*>(llama.memory_seq_add), "llama_memory_seq_add"},
        {reinterpret_cast<const void*>(llama.memory_seq_pos_min), "llama_memory_seq_pos_min"},
        {reinterpret_cast<const void*>(llama.memory_seq_pos_max), "llama_memory_seq_pos_max"},
        {reinterpret_cast<const void*>(llama.memory_can_shift), "llama_memory_can_shift"},
        {reinterpret_cast<const void*>(llama.state_seq_get_size), "llama_state_seq_get_size"},
        {reinterpret_cast<const void*>(llama.state_seq_save_file), "llama_state_seq_save_file"},
        {reinterpret_cast<const void*>(llama.state_seq_load_file), "llama_state_seq_load_file"},
        {reinterpret_cast<const void*>(llama.batch_init), "llama_batch_init"},
        {reinterpret_cast<const void*>(llama.batch_free), "llama_batch_free"},
        {reinterpret_cast<const void*>(llama.decode), "llama_decode"},
        {reinterpret_cast<const void*>(llama.synchronize), "llama_synchronize"},
    };
    for (const auto& [function, name] : needed) {
        if (function == nullptr) {
            missing = name;
            return false;
        }
    }
    return true;
}

}  // namespace draftline
