// The GPU quantizers against the host formats library, bit for bit: fresh random inputs,
// odd sizes, subnormal and huge values, and NaN/Inf rejected with an error naming the tensor.
#include "gpu_fixture.h"

#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/quantize/params.cuh"

#include <cmath>
#include <cstring>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

struct Case {
  int batch, heads, seqlen, head_dim;
  float sigma;
};

// Host reference of one head, in the device's dense per-head layout.
struct HostHead {
  std::vector<uint8_t> payload, scales;
  uint32_t scalar_bits = 0;
};

HostHead referenceHead(QuantFormat format, const float *head, int S, int D) {
  HostHead out;
  formats::MatrixView rows{head, S, D, D, 1};
  formats::MatrixView vt{head, D, S, 1, D}; // V^T: rows = head dim, columns = keys
  const int skp = static_cast<int>(device::quantize::quantizePaddedKeys(S));
  if (format == QuantFormat::Nvfp4) {
    auto q = formats::quantizeNvfp4(rows);
    REQUIRE_OK(q);
    out.payload = q->payload, out.scales = q->scales;
    std::memcpy(&out.scalar_bits, &q->global_scale, 4);
  } else if (format == QuantFormat::Mxfp4) {
    auto q = formats::quantizeMxfp4(vt, skp);
    REQUIRE_OK(q);
    out.payload = q->payload, out.scales = q->scales;
    const int32_t shift = q->maxBlockExponent() - 6;
    std::memcpy(&out.scalar_bits, &shift, 4);
  } else {
    auto q = formats::quantizeFp8PerTensor(vt, skp);
    REQUIRE_OK(q);
    out.payload = q->payload;
    std::memcpy(&out.scalar_bits, &q->scale, 4);
  }
  return out;
}

void checkFormat(QuantFormat format, const Case &c, uint64_t seed) {
  INFO("format " << toString(format) << " B" << c.batch << " H" << c.heads << " S" << c.seqlen << " D" << c.head_dim
                 << " sigma " << c.sigma << " seed " << seed);
  std::mt19937_64 rng(seed);
  const std::size_t n = std::size_t(c.batch) * c.heads * c.seqlen * c.head_dim;
  HostBf16 x = randomBf16(n, c.sigma, rng);
  auto dx = upload(x.bits.data(), n * 2);
  auto q = gpuEngine().quantize(TensorDesc::contiguous(dx.address(), DType::BF16, c.batch, c.heads, c.seqlen,
                                                       c.head_dim),
                                format, "x");
  REQUIRE_OK(q);
  const int f = static_cast<int>(format);
  const std::size_t pb = device::quantize::quantizePayloadBytesPerHead(f, c.head_dim, c.seqlen);
  const std::size_t sb = device::quantize::quantizeScaleBytesPerHead(f, c.head_dim, c.seqlen);
  const int BH = c.batch * c.heads;
  auto payload = download<uint8_t>(q->payload, pb * BH);
  auto scales = sb ? download<uint8_t>(q->scales, sb * BH) : std::vector<uint8_t>();
  auto scalars = download<uint32_t>(q->head_scalar, BH);
  for (int bh = 0; bh < BH; ++bh) {
    HostHead ref = referenceHead(format, x.values.data() + std::size_t(bh) * c.seqlen * c.head_dim, c.seqlen,
                                 c.head_dim);
    REQUIRE(ref.payload.size() == pb);
    std::size_t diffs = 0, first = 0;
    for (std::size_t i = 0; i < pb; ++i)
      if (payload[bh * pb + i] != ref.payload[i] && diffs++ == 0)
        first = i;
    INFO("head " << bh << ": payload bytes differing " << diffs << " (first at " << first << ")");
    CHECK(diffs == 0);
    if (sb) {
      REQUIRE(ref.scales.size() == sb);
      CHECK(std::memcmp(scales.data() + bh * sb, ref.scales.data(), sb) == 0);
    }
    CHECK(scalars[bh] == ref.scalar_bits);
  }
}

} // namespace

TEST_CASE("GPU quantizers match the host formats bit for bit", "[gpu][quantize]") {
  const uint64_t seed = freshSeed();
  const Case cases[] = {
      {1, 1, 1, 64, 1.0f},      {2, 3, 77, 128, 1.0f},  {1, 2, 300, 256, 3.0f},
      {2, 2, 129, 128, 1e-30f}, {1, 4, 1000, 64, 1e4f}, {1, 1, 4096, 128, 1.0f},
  };
  for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead})
    for (const Case &c : cases)
      checkFormat(f, c, seed + c.seqlen);
}

TEST_CASE("GPU quantizers reject NaN and Inf inputs with an error naming the tensor", "[gpu][quantize]") {
  std::mt19937_64 rng(freshSeed());
  for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    HostBf16 x = randomBf16(2 * 2 * 50 * 64, 1.0f, rng);
    x.bits[1234] = formats::floatToBF16(bad);
    auto dx = upload(x.bits.data(), x.bits.size() * 2);
    for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead}) {
      auto q = gpuEngine().quantize(TensorDesc::contiguous(dx.address(), DType::BF16, 2, 2, 50, 64), f, "k");
      REQUIRE_FALSE(static_cast<bool>(q));
      const std::string msg = errorText(q.takeError());
      CHECK(msg.find("k:") != std::string::npos);
      CHECK(msg.find("NaN or Inf") != std::string::npos);
    }
  }
}
