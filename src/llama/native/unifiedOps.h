// What runs on Draftline's own contexts (unified.h): a decode whose tokens may belong to several
// sequences, the memory operations (cut, copy, shift, positions) and a sequence's state to and from a
// file. The reads of a decoded batch are reads.cpp's, given the context's handle.
#pragma once

#include "binding.h"

namespace draftline {

Napi::Value UnifiedDecode(const Napi::CallbackInfo& info);
Napi::Value UnifiedMemory(const Napi::CallbackInfo& info);
Napi::Value UnifiedSaveState(const Napi::CallbackInfo& info);
Napi::Value UnifiedLoadState(const Napi::CallbackInfo& info);

}  // namespace draftline
