#pragma once
// Shared pieces of the [gpu] tests: one Engine per process, fresh random BF16 tensors (the seed
// is printed so a failure can be replayed with FA4JIT_TEST_SEED... no: the seed is part of the
// failure message), uploads and downloads. Never zeros: inputs are Gaussian, outputs poisoned.
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

} // namespace fa4jit::testing
