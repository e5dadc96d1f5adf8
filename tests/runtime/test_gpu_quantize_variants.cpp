// Quantizer variants the engine's default path does not exercise, bit for bit against the host
// formats: V^T with Hopper's permuted key order, FP32 input, strided ([B, S, H, D]) and unaligned
// inputs (the scalar-load path), small CTAs, and uneven amax chunking; and each one-pass kernel
// against its format's two passes (MXFP4 alone; the others in clusters of every size). Kernels are generated from
// explicit specs and launched as the params.cuh contract describes.
#include "gpu_fixture.h"

#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/quantize/params.cuh"
// vtKeyAt: the stored key order (params.cuh)

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

using namespace fa4jit;
using namespace fa4jit::testing;
namespace dq = fa4jit::device::quantize;

namespace {

struct Variant {
  QuantFormat format;
  bool fp32, permuted;
  int threads;
  int batch, heads, seqlen, head_dim;
  bool bshd;     // x stored [B, S, H, D] (head stride D, row stride H * D)
  int offset;    // elements before x's first element (odd: no 16-byte vectors)
  int chunks;    // amax_chunks
};

struct Outputs {
  std::vector<uint8_t> payload, scales;
  std::vector<uint32_t> scalars;
};

// x's shape [B, H, S, D] in the params, stored [B, H, S, D] or, with bshd, [B, S, H, D] (head stride
// D, row stride H * D).
void setShape(dq::QuantizeParams &p, int B, int H, int S, int D, bool bshd) {
  p.x_batch_stride = int64_t(H) * S * D;
  p.x_head_stride = bshd ? D : int64_t(S) * D;
  p.x_row_stride = bshd ? int64_t(H) * D : D;
  p.batch = B, p.heads = H, p.seqlen = S;
}

// Runs both passes of `spec` on x (as floats, exactly representable in the input type).
Outputs runGpu(const KernelSpec &spec, const Variant &v, const std::vector<float> &x_logical) {
  const int B = v.batch, H = v.heads, S = v.seqlen, D = v.head_dim;
  const std::size_t n = std::size_t(B) * H * S * D;
  const std::size_t esize = v.fp32 ? 4 : 2;
  std::vector<uint8_t> host((n + v.offset) * esize, 0);
  auto index = [&](int b, int h, int s, int d) -> std::size_t {
    return v.bshd ? ((std::size_t(b) * S + s) * H + h) * D + d : ((std::size_t(b) * H + h) * S + s) * D + d;
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int s = 0; s < S; ++s)
        for (int d = 0; d < D; ++d) {
          const float f = x_logical[((std::size_t(b) * H + h) * S + s) * D + d];
          const std::size_t at = (v.offset + index(b, h, s, d)) * esize;
          if (v.fp32) {
            std::memcpy(&host[at], &f, 4);
          } else {
            const uint16_t bits = formats::floatToBF16(f);
            std::memcpy(&host[at], &bits, 2);
          }
        }
  auto dx = upload(host.data(), host.size());
  llvm::Expected<EmittedKernel> k = emitKernel(spec);
  REQUIRE_OK(k);
  REQUIRE(k->entries.size() >= 2);
  auto amax = gpuEngine().kernel(spec, k->entries[0].name);
  REQUIRE_OK(amax);
  auto encode = gpuEngine().kernel(spec, k->entries[1].name);
  REQUIRE_OK(encode);

  const int f = static_cast<int>(v.format);
  const std::size_t pb = dq::quantizePayloadBytesPerHead(f, D, S), sb = dq::quantizeScaleBytesPerHead(f, D, S);
  // Poisoned outputs: every byte the kernels own must be written.
  std::vector<uint8_t> poison(std::max<std::size_t>(pb, sb) * B * H + 16, 0xA5);
  auto payload = upload(poison.data(), pb * B * H);
  auto scales = upload(poison.data(), sb ? sb * B * H : 16);
  auto scalar = upload(poison.data(), 4 * B * H);
  auto partial = upload(poison.data(), 4 * B * H * v.chunks);
  auto flags = upload(poison.data(), std::size_t(dq::nonfiniteRowsBytes(B * H, S)));

  dq::QuantizeParams p{};
  p.x = dx.address() + v.offset * esize;
  p.payload = payload.address();
  p.scales = sb ? scales.address() : 0;
  p.head_scalar = scalar.address();
  p.amax_partial = partial.address();
  p.nonfinite_rows = flags.address();
  setShape(p, B, H, S, D, v.bshd);
  p.amax_chunks = v.chunks;
  void *args[] = {&p};
  runtime::LaunchConfig l1;
  l1.grid = {unsigned(v.chunks), unsigned(B * H), 1};
  l1.block = {unsigned(v.threads), 1, 1};
  REQUIRE_SUCCESS(amax->launch(l1, args));
  const dq::Grid3 g = dq::quantizeEncodeGrid(f, D, v.threads, B, H, S);
  runtime::LaunchConfig l2;
  l2.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
  l2.block = {unsigned(v.threads), 1, 1};
  REQUIRE_SUCCESS(encode->launch(l2, args));
  Outputs out;
  out.payload = download<uint8_t>(payload, pb * B * H);
  if (sb)
    out.scales = download<uint8_t>(scales, sb * B * H);
  out.scalars = download<uint32_t>(scalar, B * H);
  // Finite inputs: no head has a non-finite row, and every mask word is written (zero).
  const auto rows = download<uint32_t>(flags, std::size_t(dq::nonfiniteRowsBytes(B * H, S)) / 4);
  for (int bh = 0; bh < B * H; ++bh)
    CHECK(int32_t(rows[bh]) == dq::kNoNonFiniteRow);
  for (std::size_t w = std::size_t(B) * H; w < rows.size(); ++w)
    CHECK(rows[w] == 0u);
  return out;
}

void checkVariant(const Variant &v, uint64_t seed) {
  INFO("format " << toString(v.format) << " fp32 " << v.fp32 << " permuted " << v.permuted << " threads " << v.threads
                 << " B" << v.batch << " H" << v.heads << " S" << v.seqlen << " D" << v.head_dim << " bshd " << v.bshd
                 << " offset " << v.offset << " chunks " << v.chunks << " seed " << seed);
  KernelSpec spec = defaultQuantizeSpec(v.format, v.head_dim, gpuEngine().target(), v.fp32, v.permuted);
  spec.quantize.threads = v.threads;
  const int S = v.seqlen, D = v.head_dim;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(std::size_t(v.batch) * v.heads * S * D);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Per-element magnitudes over many binades, so block scales and exponents vary.
    const float mag = std::ldexp(1.0f, int(rng() % 24) - 12);
    x[i] = normal(rng) * mag;
    x[i] = v.fp32 ? x[i] : formats::roundToBF16(x[i]);
  }
  const Outputs gpu = runGpu(spec, v, x);
  const int f = static_cast<int>(v.format);
  const std::size_t pb = dq::quantizePayloadBytesPerHead(f, D, S), sb = dq::quantizeScaleBytesPerHead(f, D, S);
  const int skp = static_cast<int>(dq::quantizePaddedKeys(S));
  for (int bh = 0; bh < v.batch * v.heads; ++bh) {
    const float *head = x.data() + std::size_t(bh) * S * D;
    std::vector<uint8_t> payload, scales;
    uint32_t scalar = 0;
    if (v.format == QuantFormat::Nvfp4) {
      auto q = formats::quantizeNvfp4({head, S, D, D, 1});
      REQUIRE_OK(q);
      payload = q->payload, scales = q->scales;
      std::memcpy(&scalar, &q->global_scale, 4);
    } else {
      // V^T [D, Skp] with keys in stored order: position p of each 32 holds key vtKeyAt(p).
      std::vector<float> vt(std::size_t(D) * skp, 0.0f);
      for (int d = 0; d < D; ++d)
        for (int pos = 0; pos < skp; ++pos) {
          const int key = pos / 32 * 32 + dq::vtKeyAt(pos % 32, v.permuted);
          vt[std::size_t(d) * skp + pos] = key < S ? head[std::size_t(key) * D + d] : 0.0f;
        }
      const formats::MatrixView view{vt.data(), D, skp, skp, 1};
      if (v.format == QuantFormat::Mxfp4) {
        auto q = formats::quantizeMxfp4(view, skp);
        REQUIRE_OK(q);
        payload = q->payload, scales = q->scales;
        const int32_t shift = q->maxBlockExponent() - 6;
        std::memcpy(&scalar, &shift, 4);
      } else {
        auto q = formats::quantizeFp8PerTensor(view, skp);
        REQUIRE_OK(q);
        payload = q->payload;
        std::memcpy(&scalar, &q->scale, 4);
      }
    }
    INFO("head " << bh);
    REQUIRE(payload.size() == pb);
    CHECK(std::memcmp(gpu.payload.data() + bh * pb, payload.data(), pb) == 0);
    if (sb) {
      REQUIRE(scales.size() == sb);
      CHECK(std::memcmp(gpu.scales.data() + bh * sb, scales.data(), sb) == 0);
    }
    CHECK(gpu.scalars[bh] == scalar);
  }
}

} // namespace

TEST_CASE("quantizer variants match the host formats bit for bit", "[gpu][quantize]") {
  const uint64_t seed = freshSeed();
  const Variant variants[] = {
      // format                 fp32   perm   thr  B  H  S     D    bshd   off chunks
      {QuantFormat::Mxfp4,      false, true,  256, 2, 3, 200,  128, false, 0, 5},
      {QuantFormat::Mxfp4,      true,  true,  128, 1, 2, 129,  64,  true,  0, 1},
      {QuantFormat::Mxfp4,      false, false, 64,  1, 1, 33,   256, true,  1, 7},
      {QuantFormat::Fp8PerHead, true,  true,  256, 2, 2, 300,  128, true,  0, 3},
      {QuantFormat::Fp8PerHead, false, true,  128, 1, 3, 17,   64,  false, 3, 2},
      {QuantFormat::Nvfp4,      true,  false, 256, 2, 2, 150,  128, true,  0, 4},
      {QuantFormat::Nvfp4,      false, false, 64,  1, 2, 131,  256, false, 1, 9},
      {QuantFormat::Nvfp4,      true,  false, 512, 1, 1, 1000, 64,  false, 2, 13},
  };
  for (const Variant &v : variants)
    checkVariant(v, seed + v.seqlen);
}

namespace {

struct OnePassCase {
  bool fp32, permuted;
  int threads, batch, heads, seqlen, head_dim;
  int offset;     // elements before x's first element (odd: no 16-byte vectors)
  int nonfinite;  // NaN/Inf elements planted in x
};

struct PassOutputs {
  std::vector<uint8_t> payload, scales;
  std::vector<uint32_t> scalars, rows;
};

// A one-pass kernel against its format's two passes: every byte they wrote.
void checkSameOutputs(const PassOutputs &one, const PassOutputs &two) {
  CHECK(one.payload == two.payload);
  CHECK(one.scales == two.scales);
  CHECK(one.scalars == two.scalars);
  CHECK(one.rows == two.rows);
}

// Whether some head of the outputs names a first non-finite row.
bool anyNonFiniteHead(const PassOutputs &out, int heads) {
  return std::any_of(out.rows.begin(), out.rows.begin() + heads,
                     [](uint32_t r) { return int32_t(r) != dq::kNoNonFiniteRow; });
}

// Runs the MXFP4 quantizer `spec` on x (dense [B, H, S, D] from element `offset`) either as its two
// passes or as its encode pass alone with sync words, into poisoned buffers, and returns
// everything it wrote.
PassOutputs runMxfp4(const KernelSpec &spec, const OnePassCase &c, const runtime::DeviceBuffer &x, bool one_pass) {
  const int B = c.batch, H = c.heads, S = c.seqlen, D = c.head_dim;
  llvm::Expected<EmittedKernel> k = emitKernel(spec);
  REQUIRE_OK(k);
  REQUIRE(k->entries.size() == 2);
  const std::size_t pb = dq::quantizePayloadBytesPerHead(1, D, S), sb = dq::quantizeScaleBytesPerHead(1, D, S);
  const std::size_t rows_bytes = std::size_t(dq::nonfiniteRowsBytes(B * H, S));
  std::vector<uint8_t> poison(std::max({pb, sb, rows_bytes}) * B * H + 64, 0x5A);
  auto payload = upload(poison.data(), pb * B * H);
  auto scales = upload(poison.data(), sb * B * H);
  auto scalar = upload(poison.data(), 4 * B * H);
  auto rows = upload(poison.data(), rows_bytes);
  const std::size_t sync_words = std::size_t(dq::quantizeSyncWords(B * H));
  std::vector<uint32_t> zeros(sync_words, 0u);
  auto sync = upload(zeros.data(), sync_words * 4);
  const int chunks = dq::quantizeDefaultAmaxChunks(B, H, S);
  auto partial = upload(poison.data(), 4 * std::size_t(B) * H * chunks);

  dq::QuantizeParams p{};
  p.x = x.address() + std::size_t(c.offset) * (c.fp32 ? 4 : 2);
  p.payload = payload.address(), p.scales = scales.address(), p.head_scalar = scalar.address();
  p.nonfinite_rows = rows.address(), p.amax_partial = partial.address();
  setShape(p, B, H, S, D, /*bshd=*/false);
  p.amax_chunks = chunks;
  p.sync = one_pass ? sync.address() : 0;
  void *args[] = {&p};
  runtime::LaunchConfig l;
  l.block = {unsigned(c.threads), 1, 1};
  if (!one_pass) {
    auto amax = gpuEngine().kernel(spec, k->entries[0].name);
    REQUIRE_OK(amax);
    l.grid = {unsigned(chunks), unsigned(B * H), 1};
    REQUIRE_SUCCESS(amax->launch(l, args));
  }
  auto encode = gpuEngine().kernel(spec, k->entries[1].name);
  REQUIRE_OK(encode);
  const dq::Grid3 g = dq::quantizeEncodeGrid(1, D, c.threads, B, H, S);
  l.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
  REQUIRE_SUCCESS(encode->launch(l, args));
  PassOutputs out;
  out.payload = download<uint8_t>(payload, pb * B * H);
  out.scales = download<uint8_t>(scales, sb * B * H);
  out.scalars = download<uint32_t>(scalar, B * H);
  out.rows = download<uint32_t>(rows, rows_bytes / 4);
  // One pass leaves its sync words as it found them: zero, ready for the next launch.
  const auto left = download<uint32_t>(sync, sync_words);
  CHECK(std::all_of(left.begin(), left.end(), [](uint32_t w) { return w == 0u; }));
  return out;
}

} // namespace

TEST_CASE("MXFP4 V^T in one pass writes what the two passes write, bit for bit", "[gpu][quantize]") {
  const uint64_t seed = freshSeed();
  const OnePassCase cases[] = {
      // fp32  perm  thr  B  H  S     D    off nonfinite
      {false, true,  256, 2, 3, 1000, 128, 0, 0},
      {false, true,  256, 1, 2, 4096, 128, 0, 4}, // NaN/Inf: the last CTA finds the rows
      {false, false, 128, 2, 2, 777,  256, 0, 0},
      {false, true,  64,  1, 3, 300,  64,  1, 3}, // unaligned: the scalar staging path
      {true,  true,  128, 2, 2, 150,  128, 0, 2},
      {false, true,  256, 1, 1, 17,   128, 0, 1}, // one CTA per head
  };
  for (const OnePassCase &c : cases) {
    INFO("fp32 " << c.fp32 << " permuted " << c.permuted << " threads " << c.threads << " B" << c.batch << " H"
                 << c.heads << " S" << c.seqlen << " D" << c.head_dim << " offset " << c.offset << " nonfinite "
                 << c.nonfinite << " seed " << seed);
    KernelSpec spec = defaultQuantizeSpec(QuantFormat::Mxfp4, c.head_dim, gpuEngine().target(), c.fp32, c.permuted);
    spec.quantize.threads = c.threads;
    std::mt19937_64 rng(seed + c.seqlen);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t n = std::size_t(c.batch) * c.heads * c.seqlen * c.head_dim;
    std::vector<float> x(n);
    for (float &e : x)
      e = normal(rng) * std::ldexp(1.0f, int(rng() % 24) - 12);
    const float specials[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < c.nonfinite; ++i)
      x[rng() % n] = specials[i % 3];
    const std::size_t esize = c.fp32 ? 4 : 2;
    std::vector<uint8_t> host((n + c.offset) * esize, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (c.fp32) {
        std::memcpy(&host[(c.offset + i) * 4], &x[i], 4);
      } else {
        const uint16_t bits = formats::floatToBF16(x[i]);
        std::memcpy(&host[(c.offset + i) * 2], &bits, 2);
      }
    }
    auto dx = upload(host.data(), host.size());
    const PassOutputs two = runMxfp4(spec, c, dx, false);
    checkSameOutputs(runMxfp4(spec, c, dx, true), two);
    // The planted elements are seen: some head names a first non-finite row.
    CHECK(anyNonFiniteHead(two, c.batch * c.heads) == (c.nonfinite > 0));
  }
}

namespace {

struct ClusterCase {
  QuantFormat format;
  QuantInput input;
  bool permuted;
  int threads, batch, heads, seqlen, head_dim;
  bool bshd;     // x stored [B, S, H, D] (head stride D, row stride H * D)
  int nonfinite; // NaN/Inf elements planted in x
};

// The quantizer `spec`'s entry point whose name ends in `suffix` (a one-pass kernel), loaded.
runtime::Kernel &onePassKernel(const KernelSpec &spec, const char *suffix) {
  llvm::Expected<EmittedKernel> k = emitKernel(spec);
  REQUIRE_OK(k);
  const EntryPoint *entry = entryWithSuffix(*k, suffix);
  REQUIRE(entry != nullptr);
  auto kernel = gpuEngine().kernel(spec, entry->name);
  REQUIRE_OK(kernel);
  return *kernel;
}

// Runs the quantizer `spec` on x as its two passes (ctas == 0 and pipelined_grid == 0), as its
// one-pass cluster kernel with clusters of `ctas` CTAs, or as its pipelined one-pass kernel on a
// grid of `pipelined_grid` CTAs, into poisoned buffers, and returns everything it wrote.
PassOutputs runRowsOrFp8(const KernelSpec &spec, const ClusterCase &c, const runtime::DeviceBuffer &x, int ctas,
                         int pipelined_grid = 0) {
  const int B = c.batch, H = c.heads, S = c.seqlen, D = c.head_dim;
  const int f = static_cast<int>(c.format);
  llvm::Expected<EmittedKernel> k = emitKernel(spec);
  REQUIRE_OK(k);
  const std::size_t pb = dq::quantizePayloadBytesPerHead(f, D, S), sb = dq::quantizeScaleBytesPerHead(f, D, S);
  const std::size_t rows_bytes = std::size_t(dq::nonfiniteRowsBytes(B * H, S));
  const int chunks = pipelined_grid > 0 ? dq::quantizePipelinedGroups(S, c.threads, D)
                                        : dq::quantizeDefaultAmaxChunks(B, H, S);
  std::vector<uint8_t> poison(std::max({pb, sb, rows_bytes, std::size_t(4 * chunks)}) * B * H + 64, 0x5A);
  auto payload = upload(poison.data(), pb * B * H);
  auto scales = upload(poison.data(), sb ? sb * B * H : 16);
  auto scalar = upload(poison.data(), 4 * B * H);
  auto rows = upload(poison.data(), rows_bytes);
  auto partial = upload(poison.data(), 4 * std::size_t(B) * H * chunks);

  dq::QuantizeParams p{};
  p.x = x.address();
  p.payload = payload.address(), p.scales = sb ? scales.address() : 0, p.head_scalar = scalar.address();
  p.nonfinite_rows = rows.address(), p.amax_partial = partial.address();
  setShape(p, B, H, S, D, c.bshd);
  p.amax_chunks = chunks;
  void *args[] = {&p};
  runtime::LaunchConfig l;
  l.block = {unsigned(c.threads), 1, 1};
  if (pipelined_grid > 0) {
    runtime::Kernel &pipelined = onePassKernel(spec, kQuantizePipelinedSuffix);
    std::vector<uint32_t> zeros(std::size_t(dq::quantizeSyncWords(B * H)), 0u);
    auto sync = upload(zeros.data(), zeros.size() * 4);
    p.sync = sync.address();
    l.grid = {unsigned(pipelined_grid), 1, 1};
    REQUIRE_SUCCESS(pipelined.launch(l, args));
    CHECK(download<uint32_t>(sync, zeros.size()) == zeros); // (left zero for the next launch)
  } else if (ctas == 0) {
    auto amax = gpuEngine().kernel(spec, k->entries[0].name);
    REQUIRE_OK(amax);
    l.grid = {unsigned(chunks), unsigned(B * H), 1};
    REQUIRE_SUCCESS(amax->launch(l, args));
    auto encode = gpuEngine().kernel(spec, k->entries[1].name);
    REQUIRE_OK(encode);
    const dq::Grid3 g = dq::quantizeEncodeGrid(f, D, c.threads, B, H, S);
    l.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
    REQUIRE_SUCCESS(encode->launch(l, args));
  } else {
    runtime::Kernel &cluster = onePassKernel(spec, kQuantizeClusterSuffix);
    const int esize = c.input == QuantInput::F32 ? 4 : 2;
    l.grid = {unsigned(ctas), unsigned(B * H), 1};
    l.cluster = {unsigned(ctas), 1, 1};
    l.dynamic_shared_bytes = unsigned(dq::quantizeClusterSliceBytes(S, D, esize, ctas));
    REQUIRE_SUCCESS(cluster.launch(l, args));
  }
  PassOutputs out;
  out.payload = download<uint8_t>(payload, pb * B * H);
  if (sb)
    out.scales = download<uint8_t>(scales, sb * B * H);
  out.scalars = download<uint32_t>(scalar, B * H);
  out.rows = download<uint32_t>(rows, rows_bytes / 4);
  return out;
}

// Whether the device holds one cluster of `ctas` CTAs of the cluster kernel of `spec` for c.
bool holdsCluster(const KernelSpec &spec, const ClusterCase &c, int ctas) {
  runtime::Kernel &cluster = onePassKernel(spec, kQuantizeClusterSuffix);
  runtime::LaunchConfig l;
  l.block = {unsigned(c.threads), 1, 1};
  l.cluster = {unsigned(ctas), 1, 1};
  l.dynamic_shared_bytes = unsigned(
      dq::quantizeClusterSliceBytes(c.seqlen, c.head_dim, c.input == QuantInput::F32 ? 4 : 2, ctas));
  auto resident = cluster.maxActiveClusters(l);
  REQUIRE_OK(resident);
  return *resident > 0;
}

} // namespace

TEST_CASE("the one-pass cluster and pipelined quantizers write what the two passes write, bit for bit",
          "[gpu][quantize]") {
  if (gpuEngine().target() != Target::Sm90a && gpuEngine().target() != Target::Sm100a)
    FAIL("this device has no thread-block clusters (sm_90a or sm_100a expected)");
  const uint64_t seed = freshSeed();
  const ClusterCase cases[] = {
      // format                 input             perm   thr  B  H  S     D    bshd   nonfinite
      {QuantFormat::Nvfp4,      QuantInput::Bf16, false, 256, 2, 3, 1000, 128, false, 0},
      {QuantFormat::Nvfp4,      QuantInput::Bf16, false, 256, 1, 2, 4096, 128, false, 2}, // (16 CTAs of 64 KiB)
      {QuantFormat::Fp8PerHead, QuantInput::Bf16, true,  256, 1, 2, 4096, 128, false, 1},
      {QuantFormat::Nvfp4,      QuantInput::F32,  false, 128, 1, 2, 300,  64,  true,  3},
      {QuantFormat::Nvfp4,      QuantInput::F16,  false, 512, 1, 2, 700,  256, false, 2},
      {QuantFormat::E4m3Rows,   QuantInput::Bf16, false, 256, 2, 2, 513,  128, true,  1},
      {QuantFormat::E4m3Rows,   QuantInput::F32,  false, 64,  1, 1, 129,  64,  false, 0},
      {QuantFormat::Fp8PerHead, QuantInput::Bf16, true,  256, 1, 3, 1000, 128, false, 4},
      {QuantFormat::Fp8PerHead, QuantInput::F16,  false, 128, 2, 1, 77,   256, true,  0},
      {QuantFormat::Fp8PerHead, QuantInput::F32,  true,  256, 1, 2, 2000, 64,  false, 1},
  };
  for (const ClusterCase &c : cases) {
    KernelSpec spec = defaultQuantizeSpec(c.format, c.head_dim, gpuEngine().target(), c.input, c.permuted);
    spec.quantize.threads = c.threads;
    std::mt19937_64 rng(seed + c.seqlen);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t n = std::size_t(c.batch) * c.heads * c.seqlen * c.head_dim;
    const int esize = c.input == QuantInput::F32 ? 4 : 2;
    std::vector<uint8_t> host(n * esize);
    const float specials[] = {NAN, INFINITY, -INFINITY};
    std::vector<float> x(n);
    const int binades = c.input == QuantInput::F16 ? 16 : 24; // (FP16 stays below its largest, 65504)
    for (float &e : x)
      e = normal(rng) * std::ldexp(1.0f, int(rng() % binades) - binades / 2);
    for (int i = 0; i < c.nonfinite; ++i)
      x[rng() % n] = specials[i % 3];
    for (std::size_t i = 0; i < n; ++i) {
      if (c.input == QuantInput::F32) {
        std::memcpy(&host[i * 4], &x[i], 4);
      } else if (c.input == QuantInput::F16) {
        const _Float16 h = static_cast<_Float16>(x[i]);
        std::memcpy(&host[i * 2], &h, 2);
      } else {
        const uint16_t bits = formats::floatToBF16(x[i]);
        std::memcpy(&host[i * 2], &bits, 2);
      }
    }
    auto dx = upload(host.data(), host.size());
    const PassOutputs two = runRowsOrFp8(spec, c, dx, 0);
    // Every cluster size whose slices fit a CTA's shared memory, 16 (non-portable) where the
    // device holds such a cluster, as the engine launches it.
    for (int ctas = 1; ctas <= dq::kQuantizeClusterMaxCtas; ctas *= 2) {
      if (dq::quantizeClusterSliceBytes(c.seqlen, c.head_dim, esize, ctas) > 200 * 1024)
        continue;
      if (ctas > 8 && !holdsCluster(spec, c, ctas))
        continue;
      INFO(toString(c.format) << " input " << esize << " bytes, permuted " << c.permuted << " threads " << c.threads
                              << " B" << c.batch << " H" << c.heads << " S" << c.seqlen << " D" << c.head_dim
                              << " bshd " << c.bshd << " nonfinite " << c.nonfinite << ", cluster of " << ctas
                              << " seed " << seed);
      checkSameOutputs(runRowsOrFp8(spec, c, dx, ctas), two);
    }
    // The pipelined one pass (NVFP4 and E4M3 rows): one CTA (every head's groups in turn), grids
    // whose steps hold part of a head or several heads, and every CTA the device holds at once.
    if (c.format != QuantFormat::Fp8PerHead) {
      runtime::LaunchConfig l;
      l.block = {unsigned(c.threads), 1, 1};
      auto per_sm = onePassKernel(spec, kQuantizePipelinedSuffix).maxActiveBlocksPerSm(l);
      REQUIRE_OK(per_sm);
      const int resident = *per_sm * gpuEngine().device().sm_count;
      for (int grid : {1, 3, 7, 64, resident}) {
        INFO(toString(c.format) << " input " << esize << " bytes, threads " << c.threads << " B" << c.batch << " H"
                                << c.heads << " S" << c.seqlen << " D" << c.head_dim << " bshd " << c.bshd
                                << " nonfinite " << c.nonfinite << ", pipelined on " << grid << " CTAs, seed " << seed);
        checkSameOutputs(runRowsOrFp8(spec, c, dx, 0, grid), two);
      }
    }
    CHECK(anyNonFiniteHead(two, c.batch * c.heads) == (c.nonfinite > 0));
  }
}
