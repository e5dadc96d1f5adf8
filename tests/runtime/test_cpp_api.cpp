// The installed C++ API (fa4jit/runtime/fa4jit.hpp) over libfa4jit.so: statuses carry the
// library's messages, owners free what they hold, tensors convert to the C layout field by field,
// and on the GPU it computes the same bits as the C API.
#include "fa4jit/runtime/fa4jit.hpp"

#include <catch2/catch.hpp>

#include "gpu_fixture.h"

#include <string>
#include <type_traits>
#include <vector>

namespace api = fa4jit::api;

static_assert(!std::is_copy_constructible_v<api::Engine> && std::is_nothrow_move_constructible_v<api::Engine>,
              "an engine has one owner");
static_assert(!std::is_copy_constructible_v<api::QuantizedTensor> &&
                  std::is_nothrow_move_constructible_v<api::QuantizedTensor>,
              "a quantized tensor has one owner");

TEST_CASE("C++ API: an engine, or the reason there is none", "[runtime][cpp-api]") {
  api::Result<api::Engine> engine = api::Engine::create(0);
  if (engine.ok()) { // a machine with a GPU
    CHECK(engine.value().handle() != nullptr);
    return;
  }
  const std::string msg = engine.status().message();
  CHECK((msg.find("no CUDA driver") != std::string::npos || msg.find("no CUDA device") != std::string::npos));
  CHECK(engine.value().handle() == nullptr);
}

TEST_CASE("C++ API: a call on no engine is a Status with the library's message", "[runtime][cpp-api]") {
  api::Engine none;
  const api::Status s = none.forward(api::ForwardArgs{});
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("must not be NULL") != std::string::npos);
  api::Result<uint64_t> bytes = none.workspaceBytes();
  CHECK_FALSE(bytes.ok());
  CHECK_FALSE(bytes.status().message().empty());
  api::Result<api::QuantizedTensor> q = none.quantize(api::Tensor{}, api::Format::Nvfp4);
  CHECK_FALSE(q.ok());
  CHECK(q.value().handle() == nullptr);
  CHECK(q.status().message().find("fa4jit_quantize: engine, x and out must not be NULL") != std::string::npos);
  const api::Status b = none.backward(api::BackwardArgs{});
  CHECK(b.message().find("fa4jit_backward: engine and args must not be NULL") != std::string::npos);
  const api::Status m = none.mergeStates(nullptr, 0, api::Tensor{});
  CHECK(m.message().find("fa4jit_merge_states: engine and o must not be NULL") != std::string::npos);
  CHECK(api::Status().ok());
  CHECK(api::version() == "0.5.0");
}

TEST_CASE("C++ API: tensors convert to the C layout field by field", "[runtime][cpp-api]") {
  const api::Tensor t = api::Tensor::contiguous(0x1000, api::DType::BF16, 2, 3, 5, 64);
  const fa4jit_tensor c = t.c();
  CHECK(c.data == 0x1000);
  CHECK(c.dtype == FA4JIT_DTYPE_BF16);
  CHECK(std::vector<int64_t>(c.shape, c.shape + 4) == std::vector<int64_t>{2, 3, 5, 64});
  CHECK(std::vector<int64_t>(c.stride, c.stride + 4) == std::vector<int64_t>{3 * 5 * 64, 5 * 64, 64, 1});
  // [B, S, H, D] memory seen as [B, H, S, D]: no copy, the strides say where each row is.
  const fa4jit_tensor b = api::Tensor::bshd(0x2000, api::DType::F32, 2, 5, 3, 64).c();
  CHECK(b.dtype == FA4JIT_DTYPE_F32);
  CHECK(std::vector<int64_t>(b.shape, b.shape + 4) == std::vector<int64_t>{2, 3, 5, 64});
  CHECK(std::vector<int64_t>(b.stride, b.stride + 4) == std::vector<int64_t>{5 * 3 * 64, 64, 3 * 64, 1});
  api::ForwardArgs a;
  a.q = t, a.route = api::Route::Nvfp8, a.causal = true, a.softmax_scale = 0.5f, a.lse = 0x3000;
  const fa4jit_forward_args fc = a.c();
  CHECK(fc.q.data == 0x1000);
  CHECK(fc.route == FA4JIT_ROUTE_NVFP8);
  CHECK(fc.causal == 1);
  CHECK(fc.softmax_scale == 0.5f);
  CHECK(fc.lse == 0x3000);
  CHECK(fc.stream == nullptr);
}

TEST_CASE("C++ API on the GPU: the C API's bits, quantized K/V and errors as statuses", "[gpu][cpp-api]") {
  api::Result<api::Engine> created = api::Engine::create(0);
  INFO(created.status().message());
  REQUIRE(created.ok());
  api::Engine engine = std::move(created).value();
  constexpr int B = 1, H = 2, S = 256, D = 128;
  const size_t n = size_t(B) * H * S * D;
  std::vector<uint16_t> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = uint16_t(0x3c00 + (i * 53) % 512);
  const fa4jit::runtime::DeviceBuffer xb = fa4jit::testing::upload(host.data(), n * 2);
  const fa4jit::runtime::DeviceBuffer ob = fa4jit::testing::upload(host.data(), n * 2);
  const api::Tensor x = api::Tensor::contiguous(xb.address(), api::DType::BF16, B, H, S, D);
  api::ForwardArgs a;
  a.q = a.k = a.v = x;
  a.o = api::Tensor::contiguous(ob.address(), api::DType::BF16, B, H, S, D);
  a.causal = true;
  REQUIRE(engine.forward(a).ok());
  const std::vector<uint16_t> cpp = fa4jit::testing::download<uint16_t>(ob, n);
  const fa4jit_forward_args c = a.c();
  REQUIRE(fa4jit_forward(engine.handle(), &c) == FA4JIT_OK);
  CHECK(fa4jit::testing::download<uint16_t>(ob, n) == cpp);

  api::Result<api::QuantizedTensor> q = engine.quantize(x, api::Format::Nvfp4);
  api::Result<api::QuantizedTensor> k = engine.quantize(x, api::Format::Nvfp4);
  api::Result<api::QuantizedTensor> v = engine.quantize(x, api::Format::Mxfp4);
  REQUIRE((q.ok() && k.ok() && v.ok()));
  api::QuantizedForwardArgs qa;
  qa.q = &q.value(), qa.k = &k.value(), qa.v = &v.value(), qa.o = a.o, qa.causal = true;
  REQUIRE(engine.forward(qa).ok());
  CHECK(fa4jit::testing::download<uint16_t>(ob, n) == cpp); // (the same quantization, so the same bits)
  qa.route = api::Route::Nvfp8; // V is MXFP4: the route needs FP8
  const api::Status wrong = engine.forward(qa);
  CHECK_FALSE(wrong.ok());
  CHECK(wrong.message().find("needs v as") != std::string::npos);

  api::Result<uint64_t> need = engine.workspaceSize(a);
  REQUIRE(need.ok());
  CHECK(need.value() > 0);
  CHECK_FALSE(engine.forward(a, 0, 0).ok());

  // Merging: the forward's state with itself is the same O, and LSE + log 2; in place.
  std::vector<float> lse_host(size_t(B) * H * S);
  for (size_t i = 0; i < lse_host.size(); ++i)
    lse_host[i] = 0.25f * float(i % 13) - 1.0f;
  const fa4jit::runtime::DeviceBuffer lb = fa4jit::testing::upload(lse_host.data(), lse_host.size() * 4);
  const api::AttentionState self[] = {{a.o, lb.address()}, {a.o, lb.address()}};
  REQUIRE(engine.mergeStates(self, 2, a.o, lb.address()).ok());
  CHECK(fa4jit::testing::download<uint16_t>(ob, n) == cpp);
  const std::vector<float> merged_lse = fa4jit::testing::download<float>(lb, lse_host.size());
  for (size_t i = 0; i < lse_host.size(); ++i)
    REQUIRE(merged_lse[i] == Approx(lse_host[i] + 0.69314718f).epsilon(1e-6));
  const api::Status too_many = engine.mergeStates(self, FA4JIT_MAX_MERGE_PARTS + 1, a.o);
  CHECK(too_many.message().find("a merge takes 1 to 16") != std::string::npos);
}
