// Binding lookup: how the addon reaches llama.cpp and node-llama-cpp's context. The llama.cpp
// functions are taken from the libllama node-llama-cpp already loaded (never a second copy), and the
// library's C++ context (`AddonContext`, the object behind `LlamaContext._ctx`) is unwrapped from its
// JS object and read through node-llama-cpp's own header for that class, so the layout is the
// library's. Every other file of the addon goes through these.
#pragma once

#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "ggml-backend.h"
#include "ggml-cpu.h"

#include "AddonContext.h"
#include "AddonModel.h"
#include "napi.h"

namespace draftline {

struct LlamaApi {
    decltype(&llama_get_logits_ith) get_logits_ith = nullptr;
    decltype(&llama_get_model) get_model = nullptr;
    decltype(&llama_model_get_vocab) model_get_vocab = nullptr;
    decltype(&llama_vocab_n_tokens) vocab_n_tokens = nullptr;
    decltype(&llama_n_ctx) n_ctx = nullptr;
    // decode (DecodeWorker): a batch of one sequence straight to llama_decode.
    decltype(&llama_batch_init) batch_init = nullptr;
    decltype(&llama_batch_free) batch_free = nullptr;
    decltype(&llama_decode) decode = nullptr;
    decltype(&llama_synchronize) synchronize = nullptr;
    // Backend sampling (llama.cpp samples on the device and keeps only candidates): not used by
    // node-llama-cpp 3.21 or 3.22; if a context ever has it, the logits row is not what the library samples.
    decltype(&llama_get_sampled_logits_ith) get_sampled_logits_ith = nullptr;
    decltype(&llama_get_sampled_probs_ith) get_sampled_probs_ith = nullptr;
    // A persistent CPU threadpool (see AttachThreadpool): llama.cpp's own, reached through libllama's dependencies.
    decltype(&llama_attach_threadpool) attach_threadpool = nullptr;
    decltype(&ggml_threadpool_params_default) threadpool_params_default = nullptr;
    decltype(&ggml_backend_dev_by_type) backend_dev_by_type = nullptr;
    decltype(&ggml_backend_dev_backend_reg) backend_dev_backend_reg = nullptr;
    decltype(&ggml_backend_reg_get_proc_address) backend_reg_get_proc_address = nullptr;
    // Device greedy (AttachDeviceGreedy): llama.cpp's backend sampling [EXPERIMENTAL], a greedy chain per sequence.
    decltype(&llama_sampler_chain_default_params) sampler_chain_default_params = nullptr;
    decltype(&llama_sampler_chain_init) sampler_chain_init = nullptr;
    decltype(&llama_sampler_chain_add) sampler_chain_add = nullptr;
    decltype(&llama_sampler_init_greedy) sampler_init_greedy = nullptr;
    decltype(&llama_sampler_free) sampler_free = nullptr;
    decltype(&llama_set_sampler) set_sampler = nullptr;
    decltype(&llama_get_sampled_token_ith) get_sampled_token_ith = nullptr;
    // The top-two chain (DeviceSampler::TopTwo) and what each sampled row shipped.
    decltype(&llama_sampler_init_top_k) sampler_init_top_k = nullptr;
    decltype(&llama_get_sampled_candidates_ith) get_sampled_candidates_ith = nullptr;
    decltype(&llama_get_sampled_candidates_count_ith) get_sampled_candidates_count_ith = nullptr;
    decltype(&llama_get_sampled_logits_count_ith) get_sampled_logits_count_ith = nullptr;
    decltype(&llama_get_sampled_probs_count_ith) get_sampled_probs_count_ith = nullptr;
    // Draftline's own contexts (unified.cpp): made on a model node-llama-cpp loaded, with one KV stream
    // for all their sequences, and their memory and state operations.
    decltype(&llama_context_default_params) context_default_params = nullptr;
    decltype(&llama_init_from_model) init_from_model = nullptr;
    decltype(&llama_free) free = nullptr;
    decltype(&llama_n_batch) n_batch = nullptr;
    decltype(&llama_n_seq_max) n_seq_max = nullptr;
    decltype(&llama_model_is_recurrent) model_is_recurrent = nullptr;
    decltype(&llama_model_is_hybrid) model_is_hybrid = nullptr;
    decltype(&llama_model_n_swa) model_n_swa = nullptr;
    decltype(&llama_get_memory) get_memory = nullptr;
    decltype(&llama_memory_seq_rm) memory_seq_rm = nullptr;
    decltype(&llama_memory_seq_cp) memory_seq_cp = nullptr;
    decltype(&llama_memory_seq_add) memory_seq_add = nullptr;
    decltype(&llama_memory_seq_pos_min) memory_seq_pos_min = nullptr;
    decltype(&llama_memory_seq_pos_max) memory_seq_pos_max = nullptr;
    decltype(&llama_memory_can_shift) memory_can_shift = nullptr;
    decltype(&llama_state_seq_get_size) state_seq_get_size = nullptr;
    decltype(&llama_state_seq_save_file) state_seq_save_file = nullptr;
    decltype(&llama_state_seq_load_file) state_seq_load_file = nullptr;
    std::string library;
    std::string error;
    bool loaded = false;
};

// The libllama node-llama-cpp loaded, looked up once per process: `loaded` false, with the reason in
// `error`, when it cannot be used; functions a release may lack are left null.
LlamaApi& api();

// node-llama-cpp 3.22 copies a position's logits into the sampler's candidates under
// AddonContext::sharedSamplerData.mutex, and we take it too, so that a stray sampleToken of another
// sequence of the same context cannot interleave with our read. 3.21's AddonContext has no such lock
// (its sampleToken reads the logits unlocked): there, nothing to take. Reads of the logits do not
// conflict with each other; a decode, the only writer, is awaited by the evaluator before it reads,
// and Draftline gives each context one sequence.
template <typename Context, typename = void>
struct SamplingLock {
    static constexpr bool exists = false;
    explicit SamplingLock(Context*) {}
};
template <typename Context>
struct SamplingLock<Context, std::void_t<decltype(std::declval<Context&>().sharedSamplerData.mutex)>> {
    static constexpr bool exists = true;
    std::lock_guard<std::mutex> lock;
    explicit SamplingLock(Context* context) : lock(context->sharedSamplerData.mutex) {}
};

// The C++ context behind node-llama-cpp's JS context object (Node-API wraps are shared by all addons
// of a process); throws a TypeError for anything else.
AddonContext* unwrapContext(Napi::Env env, Napi::Value value);

// The llama context of a context that is loaded and not disposed; throws otherwise. Call under the
// context's disposeMutex.
llama_context* liveContext(Napi::Env env, AddonContext* addon);

// The C++ model behind node-llama-cpp's JS model object (`LlamaModel._model`); throws a TypeError for
// anything else.
AddonModel* unwrapModel(Napi::Env env, Napi::Value value);

// Whether libllama has everything Draftline's own contexts need (unified.cpp); the missing function's
// name in `missing` otherwise.
bool hasUnifiedApi(LlamaApi& llama, std::string& missing);

}  // namespace draftline
