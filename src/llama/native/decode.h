// A batch decoded in one asynchronous call, straight to llama_decode (decode); a sequence's cells
// copied to another of the same context (copySequence, for measurements).
#pragma once

#include "binding.h"

namespace draftline {

Napi::Value Decode(const Napi::CallbackInfo& info);
Napi::Value CopySequence(const Napi::CallbackInfo& info);

}  // namespace draftline
