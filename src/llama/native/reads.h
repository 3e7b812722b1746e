// Reads of a decoded batch on the host, from llama.cpp's own logits rows on the calling thread (no
// copy, no hop through libuv): the greedy token of several positions in one call (readGreedy), the
// few best of each (readTop); probe checks a context's layout before any of them touches it.
#pragma once

#include "binding.h"

namespace draftline {

Napi::Value Probe(const Napi::CallbackInfo& info);
Napi::Value ReadGreedy(const Napi::CallbackInfo& info);
Napi::Value ReadTop(const Napi::CallbackInfo& info);
Napi::Value Argmax(const Napi::CallbackInfo& info);

}  // namespace draftline
