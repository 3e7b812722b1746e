// A batch decoded in one asynchronous call, straight to llama_decode (decode); a sequence's cells
// copy to another of the same context timed (timeSequenceCopy, for measurements).
#pragma once

#include <functional>
#include <string>
#include "binding.h"

namespace draftline {

// llama_decode of `batch` on `ctx`, waited for (llama_synchronize), the batch then freed: "" or why it
// failed. `refused` words a non-zero answer other than 1 (no KV slot), which each caller says its way.
std::string decodeAndFree(LlamaApi& llama, llama_context* ctx, llama_batch& batch, const std::function<std::string(int32_t)>& refused);

Napi::Value Decode(const Napi::CallbackInfo& info);
Napi::Value TimeSequenceCopy(const Napi::CallbackInfo& info);

}  // namespace draftline
