#include "transfers.h"

#include "unified.h"

#include <mutex>
#include <unordered_map>

namespace draftline {

namespace {

// Bytes of logits the readers read on the host (a row of vocabularySize floats per position): the
// measure of what verifying costs in transfers. readSampled reads none.
std::mutex hostBytesMutex;
std::unordered_map<const void*, double> hostBytesByContext;
double hostBytesTotal = 0;
// Bytes llama.cpp copied to the host for the rows readSampled read (sampled token, candidates,
// logits, probabilities): what a verified position costs in transfers on the device path.
std::unordered_map<const void*, double> sampledBytesByContext;
double sampledBytesTotal = 0;

}  // namespace

void countHostBytes(const void* key, int32_t positions, int32_t vocabularySize) {
    const double bytes = static_cast<double>(positions) * vocabularySize * sizeof(float);
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    hostBytesByContext[key] += bytes;
    hostBytesTotal += bytes;
}

void countSampledBytes(AddonContext* addon, double bytes) {
    std::lock_guard<std::mutex> counting(hostBytesMutex);
    sampledBytesByContext[addon] += bytes;
    sampledBytesTotal += bytes;
}

// sampledBytes(context?) → bytes llama.cpp copied to the host for the rows readSampled read.
Napi::Value SampledBytes(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    if (info.Length() < 1 || info[0].IsUndefined()) return Napi::Number::New(env, sampledBytesTotal);
    AddonContext* addon = unwrapContext(env, info[0]);
    auto it = sampledBytesByContext.find(addon);
    return Napi::Number::New(env, it == sampledBytesByContext.end() ? 0 : it->second);
}

// hostLogitBytes(context?) → bytes of logits readGreedy / readTop read on the host, for the context
// (node-llama-cpp's, or a Draftline context's handle), or the process without one.
Napi::Value HostLogitBytes(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const bool all = info.Length() < 1 || info[0].IsUndefined();
    const void* key = all ? nullptr
                    : isUnifiedHandle(info[0]) ? static_cast<const void*>(lookupUnified(env, info[0]).get())
                                               : static_cast<const void*>(unwrapContext(env, info[0]));
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    if (all) return Napi::Number::New(env, hostBytesTotal);
    auto it = hostBytesByContext.find(key);
    return Napi::Number::New(env, it == hostBytesByContext.end() ? 0 : it->second);
}

}  // namespace draftline
