// FP16 tensors as they are: the quantizers read FP16 as exactly the values an FP32 input would
// hold (payload, scales, head scalars and non-finite rows bit for bit), a forward from FP16 equals
// the forward on operands quantized from those FP32 values, O comes out as FP16 or BF16 as asked,
// and the bf16 route, whose kernels read BF16, refuses FP16 with a message.
#include "gpu_fixture.h"

#include "fa4jit/quantize/params.cuh"

#include <cmath>
#include <cstring>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

// FP16 values (as floats, exact) and their bits.
struct HostF16 {
  std::vector<float> values;
  std::vector<uint16_t> bits;
};

uint16_t halfBits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float halfValue(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

HostF16 randomF16(std::size_t n, float sigma, std::mt19937_64 &rng) {
  std::normal_distribution<float> dist(0.0f, sigma);
  HostF16 h;
  h.values.resize(n), h.bits.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    h.bits[i] = halfBits(dist(rng));
    h.values[i] = halfValue(h.bits[i]);
  }
  return h;
}

// The bytes a quantizer writes (its buffers may hold more, never written).
void checkSameQuantization(const QuantizedTensor &a, const QuantizedTensor &b, QuantFormat f) {
  namespace dq = device::quantize;
  const int format = static_cast<int>(f), heads = a.batch * a.heads;
  const std::size_t payload = dq::quantizePayloadBytesPerHead(format, a.head_dim, a.seqlen) * heads;
  const std::size_t scales = dq::quantizeScaleBytesPerHead(format, a.head_dim, a.seqlen) * heads;
  const std::size_t rows = heads + heads * dq::nonfiniteMaskWords(a.seqlen); // (int32 words)
  CHECK(download<uint8_t>(a.payload, payload) == download<uint8_t>(b.payload, payload));
  if (scales) // (FP8 has no scale tensor)
    CHECK(download<uint8_t>(a.scales, scales) == download<uint8_t>(b.scales, scales));
  CHECK(download<uint32_t>(a.head_scalar, heads) == download<uint32_t>(b.head_scalar, heads));
  CHECK(download<int32_t>(a.nonfinite_rows, rows) == download<int32_t>(b.nonfinite_rows, rows));
}

} // namespace

TEST_CASE("FP16 input quantizes as the same values given as FP32, bit for bit", "[gpu][quantize][fp16]") {
  const uint64_t seed = freshSeed();
  struct Case {
    int batch, heads, seqlen, head_dim, row_pad;
    float sigma;
    bool plant_nonfinite;
  };
  const Case cases[] = {
      {2, 3, 77, 128, 0, 1.0f, false},  {1, 2, 300, 256, 8, 3.0f, false},   {2, 2, 129, 64, 0, 1e-6f, false},
      {1, 4, 1000, 64, 0, 2e4f, false}, {2, 2, 50, 128, 0, 1.0f, true},     {1, 1, 4096, 128, 16, 1.0f, true},
  };
  for (const Case &c : cases) {
    INFO("B" << c.batch << " H" << c.heads << " S" << c.seqlen << " D" << c.head_dim << " row pad " << c.row_pad
             << " sigma " << c.sigma << " NaN/Inf " << c.plant_nonfinite << " seed " << seed);
    std::mt19937_64 rng(seed + c.seqlen);
    const int row = c.head_dim + c.row_pad; // elements per stored row (a padded row: strided, still aligned)
    const std::size_t n = std::size_t(c.batch) * c.heads * c.seqlen * row;
    HostF16 x = randomF16(n, c.sigma, rng);
    if (c.plant_nonfinite) {
      x.bits[std::size_t(19) * row + 5] = 0x7C00, x.values[std::size_t(19) * row + 5] = INFINITY; // head 0, row 19
      x.bits[n - 3 * row] = 0x7E00, x.values[n - 3 * row] = std::nanf("");                         // last head
    }
    auto d16 = upload(x.bits.data(), n * 2);
    auto d32 = upload(x.values.data(), n * 4);
    auto desc = [&](std::uint64_t data, DType t) {
      TensorDesc d = TensorDesc::contiguous(data, t, c.batch, c.heads, c.seqlen, c.head_dim);
      d.stride[2] = row, d.stride[1] = std::int64_t(c.seqlen) * row, d.stride[0] = d.stride[1] * c.heads;
      return d;
    };
    for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead}) {
      INFO(toString(f));
      auto from16 = gpuEngine().quantize(desc(d16.address(), DType::F16), f, "k");
      REQUIRE_OK(from16);
      auto from32 = gpuEngine().quantize(desc(d32.address(), DType::F32), f, "k");
      REQUIRE_OK(from32);
      checkSameQuantization(*from16, *from32, f);
      if (c.plant_nonfinite)
        CHECK(download<int32_t>(from16->nonfinite_rows, 1)[0] == 19);
    }
  }
}

TEST_CASE("a forward from FP16 tensors equals the forward on the same values quantized from FP32",
          "[gpu][forward][fp16]") {
  const uint64_t seed = freshSeed();
  DenseShape s;
  s.batch = 2, s.heads_q = 4, s.heads_kv = 2, s.seqlen_q = 200, s.seqlen_k = 333, s.head_dim = 128;
  std::mt19937_64 rng(seed);
  HostF16 q = randomF16(s.qElems(), 1.0f, rng), k = randomF16(s.kvElems(), 1.0f, rng),
          v = randomF16(s.kvElems(), 1.0f, rng);
  q.bits[7 * s.head_dim + 3] = 0x7E00, q.values[7 * s.head_dim + 3] = std::nanf(""); // query row 7: NaN
  auto q16 = upload(q.bits.data(), q.bits.size() * 2), k16 = upload(k.bits.data(), k.bits.size() * 2),
       v16 = upload(v.bits.data(), v.bits.size() * 2);
  auto q32 = upload(q.values.data(), q.values.size() * 4), k32 = upload(k.values.data(), k.values.size() * 4),
       v32 = upload(v.values.data(), v.values.size() * 4);
  std::vector<uint16_t> poison(s.qElems(), 0x1234);
  auto o_a = upload(poison.data(), poison.size() * 2), o_b = upload(poison.data(), poison.size() * 2);
  Engine &engine = gpuEngine();
  for (Route route : {Route::Nvfp8, Route::DirectP})
    for (bool causal : {false, true})
      for (DType o_type : {DType::F16, DType::BF16}) {
        INFO(toString(route) << (causal ? " causal" : "") << " o " << toString(o_type) << " seed " << seed);
        ForwardArgs a = denseForwardArgs(s, q16.address(), k16.address(), v16.address(), o_a.address(), 0, route,
                                         causal);
        a.q.dtype = a.k.dtype = a.v.dtype = DType::F16;
        a.o.dtype = o_type;
        REQUIRE_SUCCESS(engine.forward(a));
        const auto dense = [&](std::uint64_t p, int heads, int seqlen) {
          return TensorDesc::contiguous(p, DType::F32, s.batch, heads, seqlen, s.head_dim);
        };
        auto qq = engine.quantize(dense(q32.address(), s.heads_q, s.seqlen_q), QuantFormat::Nvfp4, "q");
        auto kq = engine.quantize(dense(k32.address(), s.heads_kv, s.seqlen_k), QuantFormat::Nvfp4, "k");
        auto vq = engine.quantize(dense(v32.address(), s.heads_kv, s.seqlen_k),
                                  route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead, "v");
        REQUIRE_OK(qq);
        REQUIRE_OK(kq);
        REQUIRE_OK(vq);
        QuantizedForwardArgs qa;
        qa.q = &*qq, qa.k = &*kq, qa.v = &*vq, qa.o = a.o, qa.route = route, qa.causal = causal;
        qa.o.data = o_b.address();
        REQUIRE_SUCCESS(engine.forward(qa));
        const auto got = download<uint16_t>(o_a, s.qElems()), want = download<uint16_t>(o_b, s.qElems());
        CHECK(got == want);
        // The NaN row is NaN in O's own type; every other element is finite.
        const uint16_t exponent = o_type == DType::F16 ? 0x7C00 : 0x7F80;
        std::size_t nan_row = 0, non_finite_elsewhere = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          const bool nan = (got[i] & exponent) == exponent && (got[i] & ~(exponent | 0x8000)) != 0;
          const bool row7 = i / s.head_dim == 7; // (batch 0, head 0, row 7)
          nan_row += row7 && nan;
          non_finite_elsewhere += !row7 && (got[i] & exponent) == exponent;
        }
        CHECK(nan_row == std::size_t(s.head_dim));
        CHECK(non_finite_elsewhere == 0);
      }
}

TEST_CASE("FP16 O holds the BF16 O's values to FP16's precision", "[gpu][forward][fp16]") {
  const uint64_t seed = freshSeed();
  DenseShape s;
  s.batch = 1, s.heads_q = 2, s.heads_kv = 2, s.seqlen_q = 256, s.seqlen_k = 256, s.head_dim = 64;
  std::mt19937_64 rng(seed);
  HostBf16 q = randomBf16(s.qElems(), 1.0f, rng), k = randomBf16(s.kvElems(), 1.0f, rng),
           v = randomBf16(s.kvElems(), 1.0f, rng);
  auto dq = upload(q.bits.data(), q.bits.size() * 2), dk = upload(k.bits.data(), k.bits.size() * 2),
       dv = upload(v.bits.data(), v.bits.size() * 2);
  std::vector<uint16_t> poison(s.qElems(), 0x1234);
  auto o16 = upload(poison.data(), poison.size() * 2), o_bf = upload(poison.data(), poison.size() * 2);
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    INFO(toString(route) << " seed " << seed);
    ForwardArgs a = denseForwardArgs(s, dq.address(), dk.address(), dv.address(), o_bf.address(), 0, route, true);
    REQUIRE_SUCCESS(gpuEngine().forward(a));
    a.o.data = o16.address(), a.o.dtype = DType::F16;
    REQUIRE_SUCCESS(gpuEngine().forward(a));
    const auto h = download<uint16_t>(o16, s.qElems()), b = download<uint16_t>(o_bf, s.qElems());
    double worst = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      const double x = halfValue(h[i]), y = formats::bf16ToFloat(b[i]);
      worst = std::max(worst, std::fabs(x - y) / std::max(std::fabs(y), 1e-3));
    }
    CHECK(worst <= 1.0 / 256); // (BF16's half ulp, 2^-9, plus FP16's, 2^-12: both round the same FP32)
  }
}

TEST_CASE("the bf16 route refuses FP16 inputs with a message; mixed dtypes are refused", "[gpu][forward][fp16]") {
  DenseShape s;
  s.seqlen_q = s.seqlen_k = 64, s.head_dim = 64;
  std::vector<uint16_t> ones(s.qElems(), 0x3C00);
  auto d = upload(ones.data(), ones.size() * 2), o = upload(ones.data(), ones.size() * 2);
  ForwardArgs a = denseForwardArgs(s, d.address(), d.address(), d.address(), o.address(), 0, Route::Bf16, false);
  a.q.dtype = a.k.dtype = a.v.dtype = DType::F16;
  const std::string bf16 = errorText(gpuEngine().forward(a));
  CHECK(bf16.find("route bf16 reads BF16 q, k and v") != std::string::npos);
  a.route = Route::DirectP, a.k.dtype = DType::BF16;
  const std::string mixed = errorText(gpuEngine().forward(a));
  CHECK(mixed.find("q, k and v dtypes differ (f16, bf16, f16)") != std::string::npos);
}
