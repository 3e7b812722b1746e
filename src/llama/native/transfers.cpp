#include "transfers.h"

#include <mutex>
#include <unordered_map>

namespace draftline {

namespace {

// Bytes of logits the readers read on the host (a row of vocabularySize floats per position): the
// measure of what verifying costs in transfers. readSampled reads none.
std::mutex hostBytesMutex;
std::unordered_map<AddonContext*, double> hostBytesByContext;
double hostBytesTotal = 0;
// Bytes llama.cpp copied to the host for the rows readSampled read (sampled token, candidates,
// logits, probabilities): what a verified position costs in transfers on the device path.
std::unordered_map<AddonContext*, double> sampledBytesByContext;
double sampledBytesTotal = 0;

}  // namespace

void countHostBytes(AddonContext* addon, int32_t positions, int32_t vocabularySize) {
    const double bytes = static_cast<double>(positions) * vocabularySize * sizeof(float);
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    hostBytesByContext[addon] += bytes;
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
// (or the process, without one).
Napi::Value HostLogitBytes(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::lock_guard<std::mutex> lock(hostBytesMutex);
    if (info.Length() < 1 || info[0].IsUndefined()) return Napi::Number::New(env, hostBytesTotal);
    AddonContext* addon = unwrapContext(env, info[0]);
    auto it = hostBytesByContext.find(addon);
    return Napi::Number::New(env, it == hostBytesByContext.end() ? 0 : it->second);
}

}  // namespace draftline
