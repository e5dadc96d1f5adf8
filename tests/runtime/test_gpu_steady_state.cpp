// What a steady stream of forwards costs the host: once a shape has run, the next calls
// allocate no device memory and never synchronize, on every route, from BF16 inputs and from
// quantized operands (the default NonFinitePolicy, Propagate). Counted through the engine's own
// driver table, whose entries are wrapped for the length of the test.
#include "gpu_fixture.h"

#include "../../runtime/src/toolchain/driver_api.h"

#include <atomic>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

std::atomic<int> g_allocs{0}, g_syncs{0};
runtime::DriverApi g_real;

CUresult countedAlloc(CUdeviceptr *p, size_t bytes) {
  ++g_allocs;
  return g_real.cuMemAlloc(p, bytes);
}
CUresult countedDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  ++g_syncs;
  return g_real.cuMemcpyDtoH(dst, src, bytes);
}
CUresult countedHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  ++g_syncs;
  return g_real.cuMemcpyHtoD(dst, src, bytes);
}
CUresult countedMemset(CUdeviceptr p, unsigned char v, size_t n) {
  ++g_syncs;
  return g_real.cuMemsetD8(p, v, n);
}
CUresult countedCtxSync() {
  ++g_syncs;
  return g_real.cuCtxSynchronize();
}
CUresult countedStreamSync(CUstream s) {
  ++g_syncs;
  return g_real.cuStreamSynchronize(s);
}

// Wraps the allocation and synchronizing entries of the engine's driver table while alive.
struct CountingDriver {
  runtime::DriverApi &api;
  explicit CountingDriver(const runtime::DriverApi &table) : api(const_cast<runtime::DriverApi &>(table)) {
    g_real = api;
    api.cuMemAlloc = countedAlloc, api.cuMemcpyDtoH = countedDtoH, api.cuMemcpyHtoD = countedHtoD;
    api.cuMemsetD8 = countedMemset, api.cuCtxSynchronize = countedCtxSync;
    api.cuStreamSynchronize = countedStreamSync;
  }
  ~CountingDriver() { api = g_real; }
  void reset() { g_allocs = 0, g_syncs = 0; }
};

} // namespace

TEST_CASE("steady-state forwards allocate nothing and never synchronize",
          "[gpu][steady]") {
  constexpr int B = 2, H = 4, S = 1000, D = 128;
  const std::size_t n = std::size_t(B) * H * S * D;
  std::mt19937_64 rng(11);
  const HostBf16 x = randomBf16(n, 1.0f, rng);
  runtime::DeviceBuffer q = upload(x.bits.data(), n * 2), k = upload(x.bits.data(), n * 2),
                        v = upload(x.bits.data(), n * 2), o = upload(x.bits.data(), n * 2);
  const std::vector<float> zeros(std::size_t(B) * H * S, 0.0f);
  runtime::DeviceBuffer lse = upload(zeros.data(), zeros.size() * 4);
  Engine &engine = gpuEngine();
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (bool causal : {false, true}) {
      INFO(toString(route) << " causal " << causal);
      ForwardArgs a;
      a.q = TensorDesc::contiguous(q.address(), DType::BF16, B, H, S, D);
      a.k = TensorDesc::contiguous(k.address(), DType::BF16, B, H, S, D);
      a.v = TensorDesc::contiguous(v.address(), DType::BF16, B, H, S, D);
      a.o = TensorDesc::contiguous(o.address(), DType::BF16, B, H, S, D);
      a.lse = lse.address();
      a.route = route;
      a.causal = causal;
      REQUIRE_SUCCESS(engine.forward(a)); // (compiles, loads and grows the workspace)
      CountingDriver counting(engine.driver().api());
      counting.reset();
      for (int i = 0; i < 3; ++i)
        REQUIRE_SUCCESS(engine.forward(a));
      CHECK(g_allocs == 0);
      CHECK(g_syncs == 0);
      if (route != Route::Bf16) { // operands quantized once, attended again and again
        const QuantFormat v_format = route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead;
        auto qq = engine.quantize(a.q, QuantFormat::Nvfp4, "q");
        REQUIRE_OK(qq);
        auto kq = engine.quantize(a.k, QuantFormat::Nvfp4, "k");
        REQUIRE_OK(kq);
        auto vq = engine.quantize(a.v, v_format, "v");
        REQUIRE_OK(vq);
        QuantizedForwardArgs qa;
        qa.q = &*qq, qa.k = &*kq, qa.v = &*vq, qa.o = a.o, qa.lse = a.lse, qa.route = route, qa.causal = causal;
        REQUIRE_SUCCESS(engine.forward(qa));
        counting.reset();
        for (int i = 0; i < 3; ++i) { // each step's Q (and a cache's K/V) quantized again into its buffers
          REQUIRE_SUCCESS(engine.quantize(a.q, QuantFormat::Nvfp4, *qq, "q"));
          REQUIRE_SUCCESS(engine.quantize(a.v, v_format, *vq, "v"));
          REQUIRE_SUCCESS(engine.forward(qa));
        }
        CHECK(g_allocs == 0);
        CHECK(g_syncs == 0);
      }
    }
}
