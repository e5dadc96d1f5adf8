// A filled paged cache for timing decode (decode_fixture.h).
#include "fa4jit/runtime/decode_fixture.h"

#include "fa4jit/codegen/formats.h"
#include "fa4jit/codegen/gaussian_rng.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace fa4jit::runtime {

namespace {
// Tokens appended per Engine::appendKv call while filling the pool.
constexpr std::int64_t kAppendChunk = 65536;
// Gaussian BF16 pattern repeated over the staging rows (what timing needs is realistic values, not
// values that never repeat; generating 64k x 8 x 128 normals on one core would take seconds).
constexpr std::size_t kPatternElements = std::size_t(1) << 20;

llvm::Expected<DeviceBuffer> gaussianBf16(const CudaDriver &driver, std::size_t n, std::uint64_t seed) {
  std::vector<std::uint16_t> pattern(kPatternElements);
  GaussianRng rng(seed);
  for (std::uint16_t &x : pattern)
    x = formats::floatToBF16(float(rng.normal()));
  std::vector<std::uint16_t> bits(n);
  for (std::size_t i = 0; i < n; ++i)
    bits[i] = pattern[i % kPatternElements];
  auto buf = DeviceBuffer::allocate(driver, n * 2);
  if (!buf)
    return buf.takeError();
  if (auto e = buf->copyFromHost(bits.data(), n * 2))
    return e;
  return std::move(*buf);
}
} // namespace

double pagedRowBytes(int head_dim, KvValueFormat value_format) {
  const double k = head_dim / 2 + head_dim / 16 + 4;
  return k + (value_format == KvValueFormat::Fp8 ? head_dim + 4 : head_dim / 2 + head_dim / 32);
}

double DecodeFixture::cacheBytesRead() const {
  return double(shape_.batch) * shape_.context * shape_.kv_heads * pagedRowBytes(shape_.head_dim, shape_.value_format);
}

llvm::Expected<std::unique_ptr<DecodeFixture>> DecodeFixture::create(Engine &engine, const DecodeFixtureShape &s,
                                                                     std::uint64_t seed, double min_distinct_bytes) {
  std::unique_ptr<DecodeFixture> f(new DecodeFixture());
  f->shape_ = s;
  const int D = s.head_dim, H = s.kv_heads, ps = s.page_size;
  const CudaDriver &drv = engine.driver();
  f->pages_per_sequence_ = (s.context + ps - 1) / ps;
  f->copies_ = std::max(1, int(std::ceil(min_distinct_bytes / f->cacheBytesRead())));
  const std::int64_t pages = std::int64_t(f->pages_per_sequence_) * s.batch * f->copies_;
  if (pages > 0x7FFFFFFF)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "decode fixture: %lld pages exceed int32",
                                   static_cast<long long>(pages));
  auto pool = DeviceBuffer::allocate(drv, pagedKvCacheBytes(int(pages), H, ps, D, s.value_format));
  if (!pool)
    return pool.takeError();
  f->pool_ = std::move(*pool);
  f->cache_ = pagedKvCacheAt(f->pool_.address(), int(pages), H, ps, D, s.value_format);

  // Every slot of the pool filled through the append kernel, in chunks.
  auto k_rows = gaussianBf16(drv, std::size_t(kAppendChunk) * H * D, seed);
  if (!k_rows)
    return k_rows.takeError();
  auto v_rows = gaussianBf16(drv, std::size_t(kAppendChunk) * H * D, seed + 1);
  if (!v_rows)
    return v_rows.takeError();
  auto slots = DeviceBuffer::allocate(drv, std::size_t(kAppendChunk) * 8);
  if (!slots)
    return slots.takeError();
  const std::int64_t slots_total = pages * ps;
  std::vector<std::int64_t> slot_values(kAppendChunk);
  for (std::int64_t first = 0; first < slots_total; first += kAppendChunk) {
    const std::int64_t n = std::min(kAppendChunk, slots_total - first);
    std::iota(slot_values.begin(), slot_values.begin() + n, first);
    if (auto e = slots->copyFromHost(slot_values.data(), std::size_t(n) * 8))
      return e;
    AppendKvArgs a;
    a.cache = f->cache_;
    a.k = {k_rows->address(), DType::BF16, {n, H, 1, D}, {std::int64_t(H) * D, D, D, 1}};
    a.v = {v_rows->address(), DType::BF16, {n, H, 1, D}, {std::int64_t(H) * D, D, D, 1}};
    a.slot_mapping = slots->address();
    if (auto e = engine.appendKv(a))
      return e;
  }

  // One block table per copy over shuffled pages.
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> order(static_cast<std::size_t>(pages));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const std::vector<std::int32_t> lens(std::size_t(s.batch), s.context);
  const std::size_t q_elems = std::size_t(s.batch) * s.q_heads * s.queries * D;
  auto tables = DeviceBuffer::allocate(drv, order.size() * 4);
  auto seq_lens = DeviceBuffer::allocate(drv, lens.size() * 4);
  auto q = gaussianBf16(drv, q_elems, seed + 2);
  auto o = DeviceBuffer::allocate(drv, q_elems * 2);
  auto lse = DeviceBuffer::allocate(drv, q_elems / D * 4);
  if (!tables)
    return tables.takeError();
  if (!seq_lens)
    return seq_lens.takeError();
  if (!q)
    return q.takeError();
  if (!o)
    return o.takeError();
  if (!lse)
    return lse.takeError();
  if (auto e = tables->copyFromHost(order.data(), order.size() * 4))
    return e;
  if (auto e = seq_lens->copyFromHost(lens.data(), lens.size() * 4))
    return e;
  f->tables_ = std::move(*tables), f->seq_lens_ = std::move(*seq_lens);
  f->q_ = std::move(*q), f->o_ = std::move(*o), f->lse_ = std::move(*lse);
  return f;
}

DecodeArgs DecodeFixture::args(int rotation) const {
  const DecodeFixtureShape &s = shape_;
  DecodeArgs a;
  a.cache = cache_;
  a.q = TensorDesc::contiguous(q_.address(), DType::BF16, s.batch, s.q_heads, s.queries, s.head_dim);
  a.o = TensorDesc::contiguous(o_.address(), DType::BF16, s.batch, s.q_heads, s.queries, s.head_dim);
  a.lse = lse_.address();
  a.block_table_stride = pages_per_sequence_;
  a.seq_lens = seq_lens_.address();
  a.max_seq_len = s.context;
  const std::size_t table_bytes = std::size_t(s.batch) * pages_per_sequence_ * 4;
  a.block_table = tables_.address() + std::size_t(rotation % copies_) * table_bytes;
  return a;
}

} // namespace fa4jit::runtime
