// A batch decoded in one asynchronous call, straight to llama_decode (decode); a sequence's cells
// copy to another of the same context timed (timeSequenceCopy, for measurements).
#pragma once

#include "binding.h"

namespace draftline {

Napi::Value Decode(const Napi::CallbackInfo& info);
Napi::Value TimeSequenceCopy(const Napi::CallbackInfo& info);

}  // namespace draftline
