// The edges of a forward call on the GPU: pointers the driver does not know as this device's
// memory, tensors that run past their allocation, and empty calls (no batch, heads or queries: a
// no-op; no keys: O = 0, LSE = -inf). Each bad call is an error naming the tensor, never a fault.
#include "gpu_fixture.h"

#include <cmath>
#include <cstring>
#include <vector>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

constexpr int B = 1, H = 2, S = 64, D = 128;

struct Tensors {
  runtime::DeviceBuffer q, k, v, o, lse;
  Tensors() {
    std::mt19937_64 rng(7);
    const std::size_t n = std::size_t(B) * H * S * D;
    const HostBf16 x = randomBf16(n, 1.0f, rng);
    q = upload(x.bits.data(), n * 2), k = upload(x.bits.data(), n * 2), v = upload(x.bits.data(), n * 2);
    const std::vector<uint16_t> poison(n, 0x7fc0); // BF16 NaN: a write that misses shows
    o = upload(poison.data(), n * 2);
    const std::vector<float> lse_poison(std::size_t(B) * H * S, 12345.0f);
    lse = upload(lse_poison.data(), lse_poison.size() * 4);
  }
  ForwardArgs args(Route route) const {
    ForwardArgs a;
    a.q = TensorDesc::contiguous(q.address(), DType::BF16, B, H, S, D);
    a.k = TensorDesc::contiguous(k.address(), DType::BF16, B, H, S, D);
    a.v = TensorDesc::contiguous(v.address(), DType::BF16, B, H, S, D);
    a.o = TensorDesc::contiguous(o.address(), DType::BF16, B, H, S, D);
    a.lse = lse.address();
    a.route = route;
    return a;
  }
};

std::string forwardError(const ForwardArgs &a) {
  llvm::Error e = gpuEngine().forward(a);
  return e ? llvm::toString(std::move(e)) : std::string();
}

} // namespace

TEST_CASE("host pointers and tensors past their allocation are errors naming the tensor", "[gpu][validate]") {
  Tensors t;
  alignas(16) static uint16_t host[B * H * S * D];
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    INFO(toString(route));
    {
      ForwardArgs a = t.args(route);
      a.q.data = reinterpret_cast<std::uint64_t>(host);
      const std::string e = forwardError(a);
      CHECK(e.find("q: ") != std::string::npos);
      CHECK(e.find("is not device memory") != std::string::npos);
    }
    {
      ForwardArgs a = t.args(route);
      a.v.shape[2] = 2 * S; // twice the keys the allocation holds
      a.k.shape[2] = 2 * S;
      a.k.stride[0] = a.k.stride[1] = 2 * S * D;
      a.v.stride[0] = a.v.stride[1] = 2 * S * D;
      const std::string e = forwardError(a);
      CHECK(e.find("k: ") != std::string::npos);
      CHECK(e.find("run past the end of their allocation") != std::string::npos);
    }
    {
      ForwardArgs a = t.args(route);
      a.lse = t.lse.address() + 16; // (still 4-byte aligned) the last rows' LSE past the end
      const std::string e = forwardError(a);
      CHECK(e.find("lse: ") != std::string::npos);
    }
  }
  // The engine and its context survive every rejected call: a good one still runs.
  REQUIRE_SUCCESS(gpuEngine().forward(t.args(Route::DirectP)));
  const auto o = download<uint16_t>(t.o, std::size_t(B) * H * S * D);
  for (uint16_t bits : o)
    REQUIRE(std::isfinite(formats::bf16ToFloat(bits)));
}

TEST_CASE("an empty call does nothing, a call over no keys writes O = 0 and LSE = -inf", "[gpu][validate]") {
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    INFO(toString(route));
    Tensors t;
    for (int dim : {0, 1, 2}) {
      ForwardArgs a = t.args(route);
      a.q.shape[dim] = a.o.shape[dim] = 0;
      if (dim != 2)
        a.k.shape[dim] = a.v.shape[dim] = 0;
      REQUIRE_SUCCESS(gpuEngine().forward(a));
    }
    const auto untouched = download<uint16_t>(t.o, std::size_t(B) * H * S * D);
    for (uint16_t bits : untouched)
      REQUIRE(bits == 0x7fc0);

    ForwardArgs a = t.args(route);
    a.k.shape[2] = a.v.shape[2] = 0;
    a.k.data = a.v.data = 0;
    REQUIRE_SUCCESS(gpuEngine().forward(a));
    const auto o = download<uint16_t>(t.o, std::size_t(B) * H * S * D);
    for (uint16_t bits : o)
      REQUIRE(bits == 0);
    const auto lse = download<float>(t.lse, std::size_t(B) * H * S);
    for (float x : lse)
      REQUIRE((std::isinf(x) && x < 0));
  }
}
