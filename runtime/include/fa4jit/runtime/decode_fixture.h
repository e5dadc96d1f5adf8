#pragma once
// A paged cache filled for timing decode (the decode tuner and `fa4jit bench --decode`): every
// sequence at the full context, its tokens appended from Gaussian BF16 rows by Engine::appendKv,
// and the pool holding the batch several times over, each copy with its own block table over
// shuffled pages, so that rotating the tables reads at least `min_distinct_bytes` of distinct pages
// (an H200's L2 holds 50 MB: small shapes would otherwise be timed from L2).
#include "fa4jit/runtime/device_objects.h"
#include "fa4jit/runtime/engine.h"

#include <cstdint>
#include <memory>

namespace fa4jit::runtime {

// Decode calls back to back between the events of one timed repeat: a decode at small shapes takes
// a few microseconds, and one call per event pair would time its launch gap.
inline constexpr int kDecodeCallsPerTimedRepeat = 20;

struct DecodeFixtureShape {
  int batch = 1, q_heads = 32, kv_heads = 8, queries = 1, context = 4096;
  int head_dim = 128, page_size = 16;
  KvValueFormat value_format = KvValueFormat::Fp8;
};

// Cache bytes one (token, kv head) row occupies: NVFP4 K codes, block scales and row scale, then
// FP8 V and its row scale or MXFP4 V and its block scales.
double pagedRowBytes(int head_dim, KvValueFormat value_format);

class DecodeFixture {
public:
  static llvm::Expected<std::unique_ptr<DecodeFixture>> create(Engine &engine, const DecodeFixtureShape &shape,
                                                               std::uint64_t seed, double min_distinct_bytes = 256e6);
  // Decode arguments over copy `rotation % copies()` (splits and spec left to the caller).
  DecodeArgs args(int rotation) const;
  int copies() const { return copies_; }
  double cacheBytesRead() const; // the cache bytes one decode reads
  const DecodeFixtureShape &shape() const { return shape_; }

private:
  DecodeFixture() = default;
  DecodeFixtureShape shape_;
  int copies_ = 1, pages_per_sequence_ = 1;
  PagedKvCache cache_;
  DeviceBuffer pool_, tables_, seq_lens_, q_, o_, lse_;
};

} // namespace fa4jit::runtime
