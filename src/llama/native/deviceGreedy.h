// Device greedy: llama.cpp's backend sampling [EXPERIMENTAL], a sampler chain per sequence whose
// reduction of each output row runs on the device (deviceGreedy.cpp says how and why). The host
// readers refuse a sequence with a chain attached: its rows of logits are not copied any more.
#pragma once

#include <cstdint>
#include <mutex>

#include "binding.h"

namespace draftline {

// Guards the chains; taken before the context's disposeMutex, everywhere.
extern std::mutex deviceGreedyMutex;

// Throws when a chain is attached to sequence `seq` of the context (-1: to any of its sequences).
// Under deviceGreedyMutex and the context's disposeMutex.
void refuseIfDeviceGreedy(Napi::Env env, AddonContext* addon, LlamaApi& llama, int32_t seq);

Napi::Value AllowSampledOutputs(const Napi::CallbackInfo& info);
Napi::Value AttachDeviceGreedy(const Napi::CallbackInfo& info);
Napi::Value DetachDeviceGreedy(const Napi::CallbackInfo& info);
Napi::Value ReleaseDeviceGreedy(const Napi::CallbackInfo& info);
Napi::Value ReadSampled(const Napi::CallbackInfo& info);

}  // namespace draftline
