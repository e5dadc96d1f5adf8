#pragma once
// Shared pieces of the [gpu] tests: one Engine per process, fresh random BF16 tensors (a test
// names its seed in its failure messages), uploads, downloads and the arguments of a forward over
// dense tensors. Never zeros: inputs are Gaussian, outputs poisoned.
#include "fa4jit/codegen/formats.h"
#include "fa4jit/runtime/engine.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fa4jit::testing {

inline Engine &gpuEngine() {
  static std::unique_ptr<Engine> engine = [] {
    auto e = Engine::create();
    if (!e) {
      FAIL("cannot create the fa4jit engine: " << llvm::toString(e.takeError()));
    }
    return std::move(*e);
  }();
  return *engine;
}

// Fresh entropy per run; printed by the tests so a failing run can be repeated.
inline uint64_t freshSeed() { return (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}(); }

// BF16 values (as floats, already rounded) and their bits.
struct HostBf16 {
  std::vector<float> values;
  std::vector<uint16_t> bits;
};

inline HostBf16 randomBf16(std::size_t n, float sigma, std::mt19937_64 &rng) {
  std::normal_distribution<float> dist(0.0f, sigma);
  HostBf16 h;
  h.values.resize(n);
  h.bits.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    h.bits[i] = formats::floatToBF16(dist(rng));
    h.values[i] = formats::bf16ToFloat(h.bits[i]);
  }
  return h;
}

inline runtime::DeviceBuffer upload(const void *data, std::size_t bytes) {
  auto buf = runtime::DeviceBuffer::allocate(gpuEngine().driver(), bytes);
  REQUIRE_OK(buf);
  REQUIRE_SUCCESS(buf->copyFromHost(data, bytes));
  return std::move(*buf);
}

template <class T> std::vector<T> download(const runtime::DeviceBuffer &buf, std::size_t count) {
  std::vector<T> out(count);
  REQUIRE_SUCCESS(buf.copyToHost(out.data(), count * sizeof(T)));
  return out;
}

inline std::string errorText(llvm::Error e) { return llvm::toString(std::move(e)); }

// Dense (contiguous [B, H, S, D]) BF16 tensors for one forward: q and o [B, Hq, Sq, D], k and v
// [B, Hkv, Sk, D], lse float [B, Hq, Sq].
struct DenseShape {
  int batch = 1, heads_q = 1, heads_kv = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 128;
  std::size_t qElems() const { return std::size_t(batch) * heads_q * seqlen_q * head_dim; }
  std::size_t kvElems() const { return std::size_t(batch) * heads_kv * seqlen_k * head_dim; }
  std::size_t rows() const { return std::size_t(batch) * heads_q * seqlen_q; }
};

inline ForwardArgs denseForwardArgs(const DenseShape &s, std::uint64_t q, std::uint64_t k, std::uint64_t v,
                                    std::uint64_t o, std::uint64_t lse, Route route, bool causal) {
  ForwardArgs a;
  a.q = TensorDesc::contiguous(q, DType::BF16, s.batch, s.heads_q, s.seqlen_q, s.head_dim);
  a.k = TensorDesc::contiguous(k, DType::BF16, s.batch, s.heads_kv, s.seqlen_k, s.head_dim);
  a.v = TensorDesc::contiguous(v, DType::BF16, s.batch, s.heads_kv, s.seqlen_k, s.head_dim);
  a.o = TensorDesc::contiguous(o, DType::BF16, s.batch, s.heads_q, s.seqlen_q, s.head_dim);
  a.lse = lse;
  a.route = route;
  a.causal = causal;
  return a;
}

} // namespace fa4jit::testing
