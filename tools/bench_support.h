#pragma once
// What `fa4jit run` and `fa4jit bench` share: attention shapes and their FLOP count, random BF16
// device inputs (never zeros), and event timing (CUDA events after warm-up runs, the median of
// repeats).
#include "fa4jit/runtime/engine.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace fa4jit::tools {

struct AttnShape {
  int batch = 1, heads_q = 1, heads_kv = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 128;
  bool causal = false;
};

// 4 * B * Hq * D * (visible query-key pairs): the causal count is exact (bottom-right aligned).
double attentionFlops(const AttnShape &s);

// Gaussian BF16 bits (sigma 1), deterministic in `seed`, generated on all cores.
std::vector<uint16_t> randomBf16Bits(std::size_t n, uint64_t seed, float sigma = 1.0f);

struct DeviceAttentionInputs {
  runtime::DeviceBuffer q, k, v, o, lse;
  ForwardArgs args(const AttnShape &s, Route route) const;
};
llvm::Expected<DeviceAttentionInputs> makeDeviceInputs(Engine &engine, const AttnShape &s, uint64_t seed,
                                                       std::vector<uint16_t> *host_q = nullptr,
                                                       std::vector<uint16_t> *host_k = nullptr,
                                                       std::vector<uint16_t> *host_v = nullptr);

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
};
// Runs `fn` `warmup` times, then `reps` times between device events; fn(i) gets the repeat index
// (for rotating inputs).
llvm::Expected<Timing> timeOnDevice(Engine &engine, const std::function<llvm::Error(int)> &fn, int warmup, int reps);

} // namespace fa4jit::tools
