// The C API without a GPU: engine creation fails with the driver's message instead of crashing,
// NULL arguments are errors, and messages are per call.
#include "fa4jit/runtime/fa4jit_c.h"

#include <catch2/catch.hpp>

#include "gpu_fixture.h"

#include <map>
#include <string>
#include <vector>

TEST_CASE("C API reports a missing driver or device as an error with a message", "[runtime][c-api]") {
  fa4jit_engine *e = reinterpret_cast<fa4jit_engine *>(0x1);
  const int rc = fa4jit_engine_create(0, &e);
  if (rc == FA4JIT_OK) {
    // A machine with a GPU: the engine must be usable and destroyable.
    REQUIRE(e != nullptr);
    CHECK(std::string(fa4jit_last_error()).empty());
    fa4jit_engine_destroy(e);
    return;
  }
  CHECK(rc == FA4JIT_ERROR);
  CHECK(e == nullptr);
  const std::string msg = fa4jit_last_error();
  CHECK((msg.find("no CUDA driver") != std::string::npos || msg.find("no CUDA device") != std::string::npos));
}

TEST_CASE("C API rejects NULL arguments and unknown routes", "[runtime][c-api]") {
  CHECK(fa4jit_engine_create(0, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("out is NULL") != std::string::npos);
  CHECK(fa4jit_forward(nullptr, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("must not be NULL") != std::string::npos);
  CHECK(std::string(fa4jit_version()) == "0.5.0");
  fa4jit_quantized *qt = reinterpret_cast<fa4jit_quantized *>(0x1);
  CHECK(fa4jit_quantize(nullptr, nullptr, FA4JIT_FORMAT_NVFP4, nullptr, &qt) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("fa4jit_quantize: engine, x and out must not be NULL") !=
        std::string::npos);
  CHECK(fa4jit_forward_quantized(nullptr, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("must not be NULL") != std::string::npos);
  CHECK(fa4jit_engine_workspace_bytes(nullptr, nullptr) == FA4JIT_ERROR);
  CHECK(fa4jit_workspace_size(nullptr, nullptr, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("fa4jit_workspace_size: engine, args and out") != std::string::npos);
  CHECK(fa4jit_forward_with_workspace(nullptr, nullptr, 0, 0) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("fa4jit_forward_with_workspace: engine and args") != std::string::npos);
  CHECK(fa4jit_quantize_into(nullptr, nullptr, FA4JIT_FORMAT_NVFP4, nullptr, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("fa4jit_quantize_into: engine, x and into must not be NULL") !=
        std::string::npos);
  CHECK(fa4jit_backward(nullptr, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("fa4jit_backward: engine and args must not be NULL") !=
        std::string::npos);
  fa4jit_tensor o{};
  CHECK(fa4jit_merge_states(nullptr, nullptr, 2, &o, 0, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("fa4jit_merge_states: engine and o must not be NULL") !=
        std::string::npos);
  // (the part count and the parts are checked before the engine is used)
  fa4jit_engine *unused = reinterpret_cast<fa4jit_engine *>(0x1);
  fa4jit_attention_state parts[FA4JIT_MAX_MERGE_PARTS + 1] = {};
  CHECK(fa4jit_merge_states(unused, parts, FA4JIT_MAX_MERGE_PARTS + 1, &o, 0, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("num_parts is 17; a merge takes 1 to 16") != std::string::npos);
  CHECK(fa4jit_merge_states(unused, nullptr, 2, &o, 0, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("parts must not be NULL") != std::string::npos);
  fa4jit_quantized_destroy(nullptr); // (a no-op, as free)
  CHECK(fa4jit_set_auto_route_budget(nullptr, 0.98, 1.0) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("engine must not be NULL") != std::string::npos);
  int32_t route = -1;
  CHECK(fa4jit_auto_route(nullptr, 128, 0, 4096, &route, nullptr) == FA4JIT_ERROR);
  CHECK(route == -1);
}

namespace {
// One BF16 tensor [1, 2, 256, 128] of values in [0.0078, 0.0156) (q, k and v alike) and an output.
struct RampInputs {
  static constexpr int B = 1, H = 2, S = 256, D = 128;
  static constexpr size_t n = size_t(B) * H * S * D;
  std::vector<uint16_t> host = ramp();
  fa4jit::runtime::DeviceBuffer xb = fa4jit::testing::upload(host.data(), n * 2);
  fa4jit::runtime::DeviceBuffer ob = fa4jit::testing::upload(host.data(), n * 2);
  static std::vector<uint16_t> ramp() {
    std::vector<uint16_t> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = uint16_t(0x3c00 + (i * 37) % 256);
    return v;
  }
  fa4jit_tensor x() const { return {xb.address(), FA4JIT_DTYPE_BF16, {B, H, S, D}, {H * S * D, S * D, D, 1}}; }
  fa4jit_tensor o() const { return {ob.address(), FA4JIT_DTYPE_BF16, {B, H, S, D}, {H * S * D, S * D, D, 1}}; }
};
} // namespace

TEST_CASE("C API: the E4M3 Q/K presets and route auto, on the GPU", "[gpu][c-api]") {
  fa4jit_engine *e = nullptr;
  REQUIRE(fa4jit_engine_create(0, &e) == FA4JIT_OK);
  const RampInputs in;
  const size_t n = RampInputs::n;
  const fa4jit::runtime::DeviceBuffer &ob = in.ob;
  fa4jit_forward_args f = {};
  f.q = f.k = f.v = in.x();
  f.o = in.o();
  std::map<int, std::vector<uint16_t>> outputs;
  for (int route : {FA4JIT_ROUTE_FP8, FA4JIT_ROUTE_FP8_DIRECTP, FA4JIT_ROUTE_DIRECTP, FA4JIT_ROUTE_NVFP8,
                    FA4JIT_ROUTE_BF16}) {
    f.route = route;
    INFO("route " << route << ": " << fa4jit_last_error());
    REQUIRE(fa4jit_forward(e, &f) == FA4JIT_OK);
    outputs[route] = fa4jit::testing::download<uint16_t>(ob, n);
    for (uint16_t bits : outputs[route])
      REQUIRE(((bits & 0x7fff) != 0 && (bits & 0x7f80) != 0x7f80));
  }
  // Route auto runs the preset fa4jit_auto_route names, bit for bit.
  CHECK(fa4jit_set_auto_route_budget(e, 1.5, 1.0) == FA4JIT_ERROR);
  CHECK(fa4jit_set_auto_route_budget(e, 0.98, 0.0) == FA4JIT_ERROR);
  REQUIRE(fa4jit_set_auto_route_budget(e, 0.95, 1.0) == FA4JIT_OK);
  int32_t chosen = -1;
  double cosine = 0;
  REQUIRE(fa4jit_auto_route(e, RampInputs::D, 0, RampInputs::S, &chosen, &cosine) == FA4JIT_OK);
  CHECK(chosen == FA4JIT_ROUTE_DIRECTP); // (a loose budget: the fastest)
  CHECK(cosine >= 0.95);
  f.route = FA4JIT_ROUTE_AUTO;
  REQUIRE(fa4jit_forward(e, &f) == FA4JIT_OK);
  CHECK(fa4jit::testing::download<uint16_t>(ob, n) == outputs[chosen]);
  f.route = FA4JIT_ROUTE_AUTO + 1;
  CHECK(fa4jit_forward(e, &f) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("unknown route 6") != std::string::npos);
  fa4jit_engine_destroy(e);
}

TEST_CASE("C API: quantize once, attend many times, on the GPU", "[gpu][c-api]") {
  fa4jit_engine *e = nullptr;
  REQUIRE(fa4jit_engine_create(0, &e) == FA4JIT_OK);
  const RampInputs in;
  const size_t n = RampInputs::n;
  const fa4jit::runtime::DeviceBuffer &ob = in.ob;
  const fa4jit_tensor t = in.x();
  fa4jit_quantized *q = nullptr, *k = nullptr, *v = nullptr;
  REQUIRE(fa4jit_quantize(e, &t, FA4JIT_FORMAT_NVFP4, nullptr, &q) == FA4JIT_OK);
  REQUIRE(fa4jit_quantize(e, &t, FA4JIT_FORMAT_NVFP4, nullptr, &k) == FA4JIT_OK);
  REQUIRE(fa4jit_quantize(e, &t, FA4JIT_FORMAT_MXFP4, nullptr, &v) == FA4JIT_OK);
  fa4jit_quantized *bad = reinterpret_cast<fa4jit_quantized *>(0x1);
  CHECK(fa4jit_quantize(e, &t, 7, nullptr, &bad) == FA4JIT_ERROR);
  CHECK(bad == nullptr); // (an error leaves *out NULL, as fa4jit_engine_create)
  CHECK(std::string(fa4jit_last_error()).find("unknown format 7") != std::string::npos);
  fa4jit_quantized_forward_args a = {};
  a.q = q, a.k = k, a.v = v;
  a.o = in.o();
  a.route = FA4JIT_ROUTE_DIRECTP;
  for (int i = 0; i < 2; ++i) {
    INFO(fa4jit_last_error());
    REQUIRE(fa4jit_forward_quantized(e, &a) == FA4JIT_OK);
  }
  a.route = FA4JIT_ROUTE_NVFP8; // V is MXFP4: the route needs FP8
  CHECK(fa4jit_forward_quantized(e, &a) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("needs v as") != std::string::npos);
  const std::vector<uint16_t> out = fa4jit::testing::download<uint16_t>(ob, n);
  // Positive inputs: every output is a finite, non-zero average of V's rows.
  size_t nonzero = 0;
  for (uint16_t bits : out)
    nonzero += (bits & 0x7fff) != 0 && (bits & 0x7f80) != 0x7f80;
  CHECK(nonzero == n);
  uint64_t bytes = 0;
  REQUIRE(fa4jit_engine_workspace_bytes(e, &bytes) == FA4JIT_OK);
  CHECK(bytes > 0); // (the widened tile images of the wgmma kernel at least)

  // From BF16 on a workspace of the caller's: the same bits as on the engine's.
  fa4jit_forward_args f = {};
  f.q = f.k = f.v = t;
  f.o = a.o;
  f.route = FA4JIT_ROUTE_DIRECTP;
  f.causal = 1;
  REQUIRE(fa4jit_forward(e, &f) == FA4JIT_OK);
  const std::vector<uint16_t> engine_ws = fa4jit::testing::download<uint16_t>(ob, n);
  uint64_t need = 0;
  REQUIRE(fa4jit_workspace_size(e, &f, &need) == FA4JIT_OK);
  REQUIRE(need > 0);
  std::vector<uint8_t> junk(need, 0xA5); // (uninitialized memory is allowed)
  const fa4jit::runtime::DeviceBuffer ws = fa4jit::testing::upload(junk.data(), need);
  CHECK(fa4jit_forward_with_workspace(e, &f, ws.address(), need - 1) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("needs " + std::to_string(need)) != std::string::npos);
  CHECK(fa4jit_forward_with_workspace(e, &f, ws.address() + 16, need - 16) == FA4JIT_ERROR);
  REQUIRE(fa4jit_forward_with_workspace(e, &f, ws.address(), need) == FA4JIT_OK);
  CHECK(fa4jit::testing::download<uint16_t>(ob, n) == engine_ws);
  fa4jit_quantized_destroy(q), fa4jit_quantized_destroy(k), fa4jit_quantized_destroy(v);
  fa4jit_engine_destroy(e);
}
