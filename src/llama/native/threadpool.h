// Persistent CPU threadpools, one per context that asks for one (attachThreadpool, releaseThreadpool).
#pragma once

#include <string>

#include "binding.h"

namespace draftline {

// A new persistent threadpool of `threads` workers attached to `ctx`, or null with the reason in `error`.
// Free it (freeThreadpool) only after the context is freed: llama.cpp's CPU backend keeps a pointer to
// the last threadpool it computed with.
ggml_threadpool* attachNewThreadpool(llama_context* ctx, int32_t threads, uint32_t poll, std::string& error);
void freeThreadpool(ggml_threadpool* pool);

Napi::Value AttachThreadpool(const Napi::CallbackInfo& info);
Napi::Value ReleaseThreadpool(const Napi::CallbackInfo& info);

}  // namespace draftline
