// A batch decoded in one asynchronous call, straight to llama_decode (decode).
#pragma once

#include "binding.h"

namespace draftline {

Napi::Value Decode(const Napi::CallbackInfo& info);

}  // namespace draftline
