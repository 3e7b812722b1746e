// What the readers cost in transfers, per context and for the process: the bytes of logits read on
// the host (readGreedy, readTop) and the bytes llama.cpp copied to the host for the rows readSampled
// read. The JS side reads them with hostLogitBytes / sampledBytes.
#pragma once

#include <cstdint>

#include "binding.h"

namespace draftline {

// `positions` rows of `vocabularySize` floats read on the host, for the context `key` names (node-llama-cpp's
// AddonContext, or a Draftline context).
void countHostBytes(const void* key, int32_t positions, int32_t vocabularySize);
// What llama.cpp shipped for the sampled rows a readSampled read.
void countSampledBytes(AddonContext* addon, double bytes);

Napi::Value SampledBytes(const Napi::CallbackInfo& info);
Napi::Value HostLogitBytes(const Napi::CallbackInfo& info);

}  // namespace draftline
