// `fa4jit bench --decode`. Per grid point: one cache pool holding the sequences' tokens (appended
// from random BF16 rows by Engine::appendKv) several times over, so that the rotated block tables
// read at least 256 MB of distinct pages (the H200's L2 holds 50 MB: small shapes would otherwise be
// timed from L2); decode calls timed back to back between events (20 per sample, the median of the
// samples), so that launch gaps do not count for the short ones.
#include "bench_decode.h"

#include "bench_support.h"

#include "fa4jit/paged/params.cuh"

#include <fmt/format.h>

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

namespace fa4jit::tools {

namespace {

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit bench --decode: %s\n", m.c_str());
  return 1;
}

constexpr int kCallsPerSample = 20;
constexpr double kMinDistinctBytes = 256e6;

// Cache bytes one (token, kv head) row occupies: NVFP4 K payload, its block scales and row scale,
// then FP8 V and its row scale or MXFP4 V and its block scales.
double rowBytes(int head_dim, KvValueFormat value) {
  const double k = head_dim / 2 + head_dim / 16 + 4;
  return k + (value == KvValueFormat::Fp8 ? head_dim + 4 : head_dim / 2 + head_dim / 32);
}

llvm::Expected<double> copyBandwidth(Engine &engine) {
  const std::size_t bytes = std::size_t(1) << 30;
  auto x = runtime::DeviceBuffer::allocate(engine.driver(), bytes);
  if (!x)
    return x.takeError();
  auto y = runtime::DeviceBuffer::allocate(engine.driver(), bytes);
  if (!y)
    return y.takeError();
  if (auto e = x->fill(0x3C))
    return e;
  auto t = timeOnDevice(engine, [&](int) { return y->copyFrom(*x, bytes); }, 3, 10);
  if (!t)
    return t.takeError();
  return 2.0 * bytes / (t->median_ms * 1e-3); // bytes read and written per second
}

struct Point {
  int batch, context, page_size, splits;
  KvValueFormat value;
};

llvm::Error benchPoint(Engine &engine, const DecodeBenchOptions &o, const Point &pt, double copy_bytes_per_s,
                       std::uint64_t seed) {
  const int D = o.head_dim, H = o.kv_heads, ps = pt.page_size;
  const int pages_per_seq = (pt.context + ps - 1) / ps;
  const double used_bytes = double(pt.batch) * pt.context * H * rowBytes(D, pt.value);
  const int copies = std::max(1, int(std::ceil(kMinDistinctBytes / used_bytes)));
  const int pages = pages_per_seq * pt.batch * copies;
  auto pool = runtime::DeviceBuffer::allocate(engine.driver(), pagedKvCacheBytes(pages, H, ps, D, pt.value));
  if (!pool)
    return pool.takeError();
  const PagedKvCache cache = pagedKvCacheAt(pool->address(), pages, H, ps, D, pt.value);

  // Fill every page through the append kernel, in chunks of up to 64k tokens.
  const std::int64_t chunk = 65536;
  auto k_rows = runtime::DeviceBuffer::allocate(engine.driver(), std::size_t(chunk) * H * D * 2);
  auto v_rows = runtime::DeviceBuffer::allocate(engine.driver(), std::size_t(chunk) * H * D * 2);
  auto slots = runtime::DeviceBuffer::allocate(engine.driver(), std::size_t(chunk) * 8);
  if (!k_rows || !v_rows || !slots)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot allocate the append staging buffers");
  {
    const std::vector<uint16_t> k_bits = randomBf16Bits(std::size_t(chunk) * H * D, seed);
    const std::vector<uint16_t> v_bits = randomBf16Bits(std::size_t(chunk) * H * D, seed + 1);
    if (auto e = k_rows->copyFromHost(k_bits.data(), k_bits.size() * 2))
      return e;
    if (auto e = v_rows->copyFromHost(v_bits.data(), v_bits.size() * 2))
      return e;
  }
  const std::int64_t slots_total = std::int64_t(pages) * ps;
  std::vector<std::int64_t> slot_values(chunk);
  for (std::int64_t first = 0; first < slots_total; first += chunk) {
    const std::int64_t n = std::min(chunk, slots_total - first);
    std::iota(slot_values.begin(), slot_values.begin() + n, first);
    if (auto e = slots->copyFromHost(slot_values.data(), n * 8))
      return e;
    AppendKvArgs a;
    a.cache = cache;
    a.k = {k_rows->address(), DType::BF16, {n, H, 1, D}, {std::int64_t(H) * D, D, D, 1}};
    a.v = {v_rows->address(), DType::BF16, {n, H, 1, D}, {std::int64_t(H) * D, D, D, 1}};
    a.slot_mapping = slots->address();
    if (auto e = engine.appendKv(a))
      return e;
  }

  // One block table per copy over shuffled pages; every sequence at the full context.
  std::mt19937_64 rng(seed);
  std::vector<int32_t> order(pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  auto tables = runtime::DeviceBuffer::allocate(engine.driver(), std::size_t(pages) * 4);
  const std::vector<int32_t> lens(pt.batch, pt.context);
  auto seq_lens = runtime::DeviceBuffer::allocate(engine.driver(), std::size_t(pt.batch) * 4);
  const std::size_t q_elems = std::size_t(pt.batch) * o.q_heads * o.queries * D;
  auto q = runtime::DeviceBuffer::allocate(engine.driver(), q_elems * 2);
  auto out = runtime::DeviceBuffer::allocate(engine.driver(), q_elems * 2);
  auto lse = runtime::DeviceBuffer::allocate(engine.driver(), q_elems / D * 4);
  if (!tables || !seq_lens || !q || !out || !lse)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot allocate the decode buffers");
  if (auto e = tables->copyFromHost(order.data(), order.size() * 4))
    return e;
  if (auto e = seq_lens->copyFromHost(lens.data(), lens.size() * 4))
    return e;
  const std::vector<uint16_t> q_bits = randomBf16Bits(q_elems, seed + 2);
  if (auto e = q->copyFromHost(q_bits.data(), q_bits.size() * 2))
    return e;

  DecodeArgs a;
  a.cache = cache;
  a.q = TensorDesc::contiguous(q->address(), DType::BF16, pt.batch, o.q_heads, o.queries, D);
  a.o = TensorDesc::contiguous(out->address(), DType::BF16, pt.batch, o.q_heads, o.queries, D);
  a.lse = lse->address();
  a.block_table_stride = pages_per_seq;
  a.seq_lens = seq_lens->address();
  a.max_seq_len = pt.context;
  a.splits = pt.splits;
  auto plan = engine.decodePlan(a);
  if (!plan)
    return plan.takeError();
  const std::size_t table_bytes = std::size_t(pt.batch) * pages_per_seq * 4;
  auto run = [&](int rep) -> llvm::Error {
    for (int i = 0; i < kCallsPerSample; ++i) {
      a.block_table = tables->address() + ((rep * kCallsPerSample + i) % copies) * table_bytes;
      if (auto e = engine.decode(a))
        return e;
    }
    return llvm::Error::success();
  };
  auto t = timeOnDevice(engine, run, 2, o.reps);
  if (!t)
    return t.takeError();
  const double ms = t->median_ms / kCallsPerSample;
  const double achieved = used_bytes / (ms * 1e-3);
  const double bf16_bytes = double(pt.batch) * pt.context * H * D * 2 * 2;
  const double bf16_roofline_ms = bf16_bytes / copy_bytes_per_s * 1e3;
  const double fp4_roofline_ms = used_bytes / copy_bytes_per_s * 1e3;
  if (o.json) {
    llvm::json::Object row{{"kind", "fa4jit-decode"},
                           {"batch", pt.batch},
                           {"context", pt.context},
                           {"q_heads", o.q_heads},
                           {"kv_heads", H},
                           {"head_dim", D},
                           {"queries", o.queries},
                           {"page_size", ps},
                           {"value_format", toString(pt.value)},
                           {"splits", plan->splits},
                           {"warps", plan->spec.paged.warps},
                           {"ms", ms},
                           {"cache_bytes", used_bytes},
                           {"cache_gb_s", achieved / 1e9},
                           {"fraction_of_copy", achieved / copy_bytes_per_s},
                           {"copy_gb_s", copy_bytes_per_s / 1e9},
                           {"cache_roofline_ms", fp4_roofline_ms},
                           {"bf16_roofline_ms", bf16_roofline_ms},
                           {"distinct_copies", copies}};
    llvm::outs() << llvm::json::Value(std::move(row)) << "\n";
  } else {
    llvm::outs() << fmt::format("{:>5} {:>5} {:>7} {:>4} {:>6} {:>5} {:>10.4f} {:>9.0f} {:>7.2f} {:>10.4f} {:>10.4f}\n",
                                toString(pt.value), pt.batch, pt.context, ps, plan->splits, plan->spec.paged.warps, ms,
                                achieved / 1e9,
                                achieved / copy_bytes_per_s, fp4_roofline_ms, bf16_roofline_ms);
  }
  llvm::outs().flush();
  return llvm::Error::success();
}

} // namespace

int runDecodeBench(const DecodeBenchOptions &o) {
  auto engine = Engine::create();
  if (!engine)
    return fail(llvm::toString(engine.takeError()));
  auto copy = copyBandwidth(**engine);
  if (!copy)
    return fail(llvm::toString(copy.takeError()));
  if (!o.json)
    llvm::outs() << fmt::format("copy bandwidth {:.0f} GB/s; {} query heads, {} kv heads, head dim {}, {} "
                                "queries per sequence\n{:>5} {:>5} {:>7} {:>4} {:>6} {:>5} {:>10} {:>9} {:>7} {:>10} {:>10}\n",
                                *copy / 1e9, o.q_heads, o.kv_heads, o.head_dim, o.queries, "V", "batch", "context",
                                "page", "splits", "warps", "ms", "GB/s", "x copy", "roofline", "bf16 roof");
  std::uint64_t seed = 1;
  for (KvValueFormat value : o.value_formats)
  for (int page_size : o.page_sizes)
    for (int batch : o.batches)
      for (int context : o.contexts)
        for (int splits : o.splits)
          if (auto e = benchPoint(**engine, o, {batch, context, page_size, splits, value}, *copy, seed++))
            return fail(fmt::format("batch {} context {} page {}: {}", batch, context, page_size,
                                    llvm::toString(std::move(e))));
  return 0;
}

} // namespace fa4jit::tools
