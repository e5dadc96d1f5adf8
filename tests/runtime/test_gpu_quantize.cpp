// The GPU quantizers against the host formats library, bit for bit: fresh random inputs,
// odd sizes, subnormal and huge values, and NaN/Inf encoded as 0 with their rows recorded.
#include "gpu_fixture.h"

#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/quantize/params.cuh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

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

// E4M3 rows take the FP16-score kernels' shift at D 64 and 128, FP32 scores' at D 256 (both occur).
int codeShiftOf(QuantFormat format, int head_dim) {
  return format != QuantFormat::E4m3Rows ? 0 : head_dim == 256 ? 3 : 7;
}

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
  } else if (format == QuantFormat::E4m3Rows) {
    auto q = formats::quantizeE4m3Rows(rows, codeShiftOf(format, D));
    REQUIRE_OK(q);
    out.payload = q->payload;
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

// Engines that run the one-pass cluster kernel or the pipelined one pass wherever they fit, or
// always the amax and encode passes, beside gpuEngine() (the cluster kernel, else the pipelined
// pass, else the two): all must give the host's bits.
Engine &enginePassing(runtime::QuantizePasses passes) {
  static std::map<runtime::QuantizePasses, std::unique_ptr<Engine>> engines;
  std::unique_ptr<Engine> &engine = engines[passes];
  if (!engine) {
    EngineOptions options;
    options.quantize_passes = passes;
    auto e = Engine::create(options);
    if (!e)
      FAIL("cannot create the fa4jit engine: " << llvm::toString(e.takeError()));
    engine = std::move(*e);
  }
  return *engine;
}
const char *passesName(const Engine &engine) { return runtime::quantizePassesName(engine.config().quantize_passes); }
std::vector<Engine *> everyPassesEngine() {
  using runtime::QuantizePasses;
  return {&gpuEngine(), &enginePassing(QuantizePasses::Cluster), &enginePassing(QuantizePasses::Pipelined),
          &enginePassing(QuantizePasses::Two)};
}

// in_caller_memory: the operand lives in one block of memory the test owns (Engine::quantizedIn),
// with guard bytes after it that the quantizer must leave alone.
void checkFormat(Engine &engine, QuantFormat format, const Case &c, uint64_t seed, bool in_caller_memory = false) {
  INFO(passesName(engine) << ": format " << toString(format) << " B" << c.batch << " H" << c.heads << " S" << c.seqlen << " D" << c.head_dim
                 << " sigma " << c.sigma << " seed " << seed << (in_caller_memory ? " in caller memory" : ""));
  std::mt19937_64 rng(seed);
  const std::size_t n = std::size_t(c.batch) * c.heads * c.seqlen * c.head_dim;
  HostBf16 x = randomBf16(n, c.sigma, rng);
  auto dx = upload(x.bits.data(), n * 2);
  const TensorDesc tx = TensorDesc::contiguous(dx.address(), DType::BF16, c.batch, c.heads, c.seqlen, c.head_dim);
  const std::size_t need = Engine::quantizedBytes(format, c.batch, c.heads, c.seqlen, c.head_dim);
  constexpr std::size_t kGuard = 4096;
  std::vector<uint8_t> guard(need + kGuard, 0xAB);
  runtime::DeviceBuffer block = upload(guard.data(), guard.size());
  llvm::Expected<QuantizedTensor> q = in_caller_memory
                                          ? engine.quantizedIn(format, c.batch, c.heads, c.seqlen, c.head_dim,
                                                               block.address(), need)
                                          : engine.quantize(tx, format, "x", nullptr, codeShiftOf(format, c.head_dim));
  REQUIRE_OK(q);
  if (in_caller_memory) {
    REQUIRE_SUCCESS(engine.quantize(tx, format, *q, "x", nullptr, codeShiftOf(format, c.head_dim)));
    auto after = download<uint8_t>(block, guard.size());
    CHECK(std::count(after.begin() + need, after.end(), 0xAB) == std::ptrdiff_t(kGuard));
  }
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
  // (One pass: clusters of 1 to 16 CTAs, some left without rows at D 256 and S 300.)
  for (Engine *engine : everyPassesEngine())
    for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead, QuantFormat::E4m3Rows})
      for (const Case &c : cases)
        checkFormat(*engine, f, c, seed + c.seqlen);
  // E4M3 rows without their shift, or another format with one: refused.
  std::vector<uint16_t> ones(64, 0x3F80);
  runtime::DeviceBuffer dx = upload(ones.data(), ones.size() * 2);
  const TensorDesc x = TensorDesc::contiguous(dx.address(), DType::BF16, 1, 1, 1, 64);
  for (auto [f, shift] : {std::pair{QuantFormat::E4m3Rows, 0}, {QuantFormat::E4m3Rows, 17}, {QuantFormat::Nvfp4, 7}}) {
    auto q = gpuEngine().quantize(x, f, "x", nullptr, shift);
    REQUIRE_FALSE(bool(q));
    CHECK_THAT(llvm::toString(q.takeError()), Catch::Contains("code_shift"));
  }
}

namespace {

// A NaN, Inf or -Inf at (batch 0, head 0, `row`, `col`) of a [B, H, S, D] input: every byte as
// with 0 in its place, and the row recorded.
void checkNonFiniteRow(Engine &engine, int B, int H, int S, int D, int row, int col, std::mt19937_64 &rng) {
  const std::size_t at = std::size_t(row) * D + col;
  for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    INFO(passesName(engine) << ": S " << S << " D " << D << ", bad value " << bad << " at row " << row);
    HostBf16 x = randomBf16(std::size_t(B) * H * S * D, 1.0f, rng);
    x.bits[at] = formats::floatToBF16(bad);
    HostBf16 zeroed = x;
    zeroed.bits[at] = 0;
    auto dx = upload(x.bits.data(), x.bits.size() * 2), dz = upload(zeroed.bits.data(), zeroed.bits.size() * 2);
    for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead, QuantFormat::E4m3Rows}) {
      INFO(toString(f));
      const int shift = codeShiftOf(f, D);
      auto q = engine.quantize(TensorDesc::contiguous(dx.address(), DType::BF16, B, H, S, D), f, "k", nullptr, shift);
      REQUIRE_OK(q);
      auto z = engine.quantize(TensorDesc::contiguous(dz.address(), DType::BF16, B, H, S, D), f, "k", nullptr, shift);
      REQUIRE_OK(z);
      // Every byte as with 0 in its place: the element left out of every maximum, encoded as 0.
      CHECK(download<uint8_t>(q->payload, q->payload.size()) == download<uint8_t>(z->payload, z->payload.size()));
      if (f != QuantFormat::Fp8PerHead && f != QuantFormat::E4m3Rows) // (FP8 has no scale tensor)
        CHECK(download<uint8_t>(q->scales, q->scales.size()) == download<uint8_t>(z->scales, z->scales.size()));
      CHECK(download<uint32_t>(q->head_scalar, B * H) == download<uint32_t>(z->head_scalar, B * H));
      // Head 0's first non-finite row is `row` and its mask has that bit alone; the clean tensor
      // has none.
      const int words = (S + 31) / 32;
      const auto rows = download<int32_t>(q->nonfinite_rows, B * H + B * H * words);
      CHECK(rows[0] == row);
      for (int bh = 1; bh < B * H; ++bh)
        CHECK(rows[bh] == 0x7FFFFFFF);
      for (int w = 0; w < B * H * words; ++w)
        CHECK(uint32_t(rows[B * H + w]) == (w == row / 32 ? 1u << (row % 32) : 0u));
      std::vector<int32_t> none(B * H, 0x7FFFFFFF);
      none.resize(B * H + B * H * words, 0);
      CHECK(download<int32_t>(z->nonfinite_rows, none.size()) == none);
    }
  }
}

} // namespace

TEST_CASE("GPU quantizers encode NaN and Inf as 0 and record their rows", "[gpu][quantize]") {
  std::mt19937_64 rng(freshSeed());
  for (Engine *engine : everyPassesEngine()) {
    checkNonFiniteRow(*engine, 2, 2, 50, 64, 19, 18, rng);
    // One pass: a cluster of 4 CTAs of 256 rows; the row is in the third.
    checkNonFiniteRow(*engine, 1, 2, 1000, 128, 700, 5, rng);
  }
}

TEST_CASE("GPU quantizers write an operand in caller memory in place, and refuse memory too small",
          "[gpu][quantize]") {
  const uint64_t seed = freshSeed();
  for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead})
    for (const Case &c : {Case{2, 3, 77, 128, 1.0f}, Case{1, 2, 1000, 64, 3.0f}})
      checkFormat(gpuEngine(), f, c, seed + c.seqlen, /*in_caller_memory=*/true);

  const std::size_t need = Engine::quantizedBytes(QuantFormat::Nvfp4, 1, 2, 100, 64);
  std::vector<uint8_t> zeros(need, 0);
  runtime::DeviceBuffer block = upload(zeros.data(), need);
  auto small = gpuEngine().quantizedIn(QuantFormat::Nvfp4, 1, 2, 100, 64, block.address(), need - 1);
  REQUIRE_FALSE(bool(small));
  CHECK_THAT(llvm::toString(small.takeError()), Catch::Contains("needs"));
  auto misaligned = gpuEngine().quantizedIn(QuantFormat::Nvfp4, 1, 2, 100, 64, block.address() + 16, need - 16);
  REQUIRE_FALSE(bool(misaligned));
  CHECK_THAT(llvm::toString(misaligned.takeError()), Catch::Contains("aligned"));
  // A longer input than the memory was laid out for: an error, never a write past it.
  auto fitted = gpuEngine().quantizedIn(QuantFormat::Nvfp4, 1, 2, 100, 64, block.address(), need);
  REQUIRE_OK(fitted);
  std::vector<uint16_t> longer(1 * 2 * 400 * 64, 0x3F80);
  runtime::DeviceBuffer dx = upload(longer.data(), longer.size() * 2);
  llvm::Error err = gpuEngine().quantize(TensorDesc::contiguous(dx.address(), DType::BF16, 1, 2, 400, 64),
                                         QuantFormat::Nvfp4, *fitted, "x");
  REQUIRE(bool(err));
  CHECK_THAT(llvm::toString(std::move(err)), Catch::Contains("caller memory"));
}
