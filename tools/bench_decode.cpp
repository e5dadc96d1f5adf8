// `fa4jit bench --decode`. Per grid point: a filled paged cache whose rotated block tables read at
// least 256 MB of distinct pages (runtime/decode_fixture.h); decode calls timed back to back between
// events (kDecodeCallsPerTimedRepeat per sample, the median of the samples), so that launch gaps do
// not count for the short ones.
#include "bench_decode.h"

#include "bench_support.h"

#include "fa4jit/runtime/decode_fixture.h"

#include <fmt/format.h>

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>

namespace fa4jit::tools {

namespace {

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit bench --decode: %s\n", m.c_str());
  return 1;
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
  runtime::DecodeFixtureShape shape;
  shape.batch = pt.batch, shape.q_heads = o.q_heads, shape.kv_heads = o.kv_heads, shape.queries = o.queries;
  shape.context = pt.context, shape.head_dim = o.head_dim, shape.page_size = pt.page_size;
  shape.value_format = pt.value;
  auto fixture = runtime::DecodeFixture::create(engine, shape, seed);
  if (!fixture)
    return fixture.takeError();
  const runtime::DecodeFixture &f = **fixture;
  const int D = o.head_dim, H = o.kv_heads, ps = pt.page_size;
  const double used_bytes = f.cacheBytesRead();
  DecodeArgs a = f.args(0);
  a.splits = pt.splits;
  auto plan = engine.decodePlan(a);
  if (!plan)
    return plan.takeError();
  auto run = [&](int rep) -> llvm::Error {
    for (int i = 0; i < runtime::kDecodeCallsPerTimedRepeat; ++i) {
      a.block_table = f.args(rep * runtime::kDecodeCallsPerTimedRepeat + i).block_table;
      if (auto e = engine.decode(a))
        return e;
    }
    return llvm::Error::success();
  };
  auto t = timeOnDevice(engine, run, 2, o.reps);
  if (!t)
    return t.takeError();
  const double ms = t->median_ms / runtime::kDecodeCallsPerTimedRepeat;
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
                           {"kv_stages", plan->spec.paged.kv_stages},
                           {"plan", plan->from_tuning ? "tuned" : pt.splits > 0 ? "given" : "heuristic"},
                           {"ms", ms},
                           {"cache_bytes", used_bytes},
                           {"cache_gb_s", achieved / 1e9},
                           {"fraction_of_copy", achieved / copy_bytes_per_s},
                           {"copy_gb_s", copy_bytes_per_s / 1e9},
                           {"cache_roofline_ms", fp4_roofline_ms},
                           {"bf16_roofline_ms", bf16_roofline_ms},
                           {"distinct_copies", f.copies()}};
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
