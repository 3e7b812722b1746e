// Persistent CPU threadpools, one per context that asks for one (attachThreadpool, releaseThreadpool).
#pragma once

#include "binding.h"

namespace draftline {

Napi::Value AttachThreadpool(const Napi::CallbackInfo& info);
Napi::Value ReleaseThreadpool(const Napi::CallbackInfo& info);

}  // namespace draftline
