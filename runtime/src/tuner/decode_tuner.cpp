// Tuning decode plans (decode_tuner.h).
#include "fa4jit/runtime/decode_tuner.h"

#include "fa4jit/paged/params.cuh"
#include "fa4jit/runtime/decode_fixture.h"
#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/tune_timing.h"
#include "tune_common.h"

#include "llvm/Support/FormatVariadic.h"

namespace fa4jit::runtime {

DecodeTimingSource::~DecodeTimingSource() = default;

std::string DecodeTuneProblem::str() const {
  return llvm::formatv("b{0} hq{1} hkv{2} q{3} ctx{4}", batch, q_heads, kv_heads, queries, context).str();
}

long long decodeBaseCtas(int batch, int q_heads, int kv_heads, int queries) {
  const long long rows = static_cast<long long>(q_heads / std::max(1, kv_heads)) * queries;
  const long long row_blocks = (rows + device::paged::kDecodeRowsPerCta - 1) / device::paged::kDecodeRowsPerCta;
  return static_cast<long long>(batch) * kv_heads * row_blocks;
}

cache::TuningKey decodeTuningKey(Target target, int head_dim, int page_size, KvValueFormat value_format,
                                 long long base_ctas, int max_seq_len) {
  cache::TuningKey k;
  k.family = KernelFamily::PagedKv;
  k.target = target;
  k.head_dim = head_dim;
  k.page_size = page_size;
  k.value_format = value_format;
  k.cta_bucket = decodeCtaBucket(base_ctas);
  k.seqlen_bucket = seqlenBucket(max_seq_len);
  return k;
}

cache::TuningKey DecodeTuner::keyFor(const DecodeTuneRequest &r) {
  const DecodeTuneProblem &p = r.problem;
  return decodeTuningKey(r.target, r.head_dim, r.page_size, r.value_format,
                         decodeBaseCtas(p.batch, p.q_heads, p.kv_heads, p.queries), p.context);
}

llvm::Expected<TuneOutcome> DecodeTuner::tune(const DecodeTuneRequest &request, const TunerOptions &options) {
  const cache::TuningKey key = keyFor(request);
  TuneOutcome out;
  auto reused = reuseRecord(db_, key, options, out);
  if (!reused)
    return reused.takeError();
  if (*reused)
    return out;
  const DecodeTuneProblem &p = request.problem;
  DecodeShape shape;
  shape.target = request.target;
  shape.head_dim = request.head_dim;
  shape.page_size = request.page_size;
  shape.value_format = request.value_format;
  shape.base_ctas = decodeBaseCtas(p.batch, p.q_heads, p.kv_heads, p.queries);
  shape.max_seq_len = p.context;
  shape.sm_count = request.sm_count;
  auto list = enumerateDecodeCandidates(shape);
  if (!list)
    return list.takeError();
  cache::TuningRecord &rec = out.record;
  rec.key = key;
  rec.heuristic = list->heuristic;
  // The distinct modules: plans of one warp count and staging share one, whatever their splits.
  const auto sameModule = [](const KernelSpec &a, const KernelSpec &b) {
    return a.paged.warps == b.paged.warps && a.paged.kv_stages == b.paged.kv_stages;
  };
  std::vector<KernelSpec> specs;
  for (const DecodeCandidate &c : list->kept) {
    cache::CandidateResult r;
    r.spec = c.spec;
    r.splits = c.splits;
    r.label = c.label;
    rec.candidates.push_back(std::move(r));
    if (std::none_of(specs.begin(), specs.end(), [&](const KernelSpec &s) { return sameModule(s, c.spec); }))
      specs.push_back(c.spec);
  }
  auto progress = [&](const char *phase, size_t done, size_t total) {
    if (options.progress)
      options.progress(phase, done, total);
  };
  out.compiled = int(specs.size());
  std::vector<llvm::Error> compiled =
      compiler_.compileAll(specs, [&](size_t done, size_t total) { progress("compile", done, total); });
  for (size_t j = 0; j < compiled.size(); ++j) {
    if (!compiled[j])
      continue;
    const std::string why = "compile: " + clipped(llvm::toString(std::move(compiled[j])));
    for (cache::CandidateResult &c : rec.candidates)
      if (j < specs.size() && sameModule(c.spec, specs[j]))
        c.error = why;
  }
  for (size_t i = compiled.size(); i < specs.size(); ++i)
    for (cache::CandidateResult &c : rec.candidates)
      if (sameModule(c.spec, specs[i]))
        c.error = "compile: the compiler returned no result";
  size_t done = 0;
  for (cache::CandidateResult &c : rec.candidates) {
    progress("time", ++done, rec.candidates.size());
    if (!c.error.empty())
      continue;
    auto t = timing_.time(c.spec, c.splits, p);
    ++out.timed;
    if (!t) {
      c.error = "launch: " + clipped(llvm::toString(t.takeError()));
      continue;
    }
    recordTime(c, *t);
  }
  auto chosen = selectWinner(rec.candidates, options.min_tie_band);
  if (!chosen)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tuning " + key.str() + ": " + llvm::toString(chosen.takeError()));
  if (llvm::Error e = storeRecord(db_, *chosen, timing_.describe(), p.str(), out))
    return e;
  return out;
}

struct EngineDecodeTimingSource::Inputs {
  std::unique_ptr<DecodeFixture> fixture;
};

EngineDecodeTimingSource::EngineDecodeTimingSource(Engine &engine, DecodeTimingOptions options)
    : engine_(engine), options_(options) {}
EngineDecodeTimingSource::~EngineDecodeTimingSource() = default;

std::string EngineDecodeTimingSource::describe() const {
  return llvm::formatv("cuda-events warmup {0} reps {1} median, {2} decodes per repeat, block tables rotated over "
                       ">= 256 MB",
                       options_.warmup, options_.reps, kDecodeCallsPerTimedRepeat)
      .str();
}

llvm::Expected<TimingStats> EngineDecodeTimingSource::time(const KernelSpec &spec, int splits,
                                                           const DecodeTuneProblem &p) {
  if (options_.reps < 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "timing needs at least one repeat");
  const PagedKvSpec &ps = spec.paged;
  const std::string key =
      llvm::formatv("{0} d{1} p{2} {3}", p.str(), ps.head_dim, ps.page_size, toString(ps.value_format)).str();
  if (key != inputs_key_ || !inputs_) {
    inputs_.reset(); // (the last shape's pool first: two large pools need not fit at once)
    DecodeFixtureShape s;
    s.batch = p.batch, s.q_heads = p.q_heads, s.kv_heads = p.kv_heads, s.queries = p.queries, s.context = p.context;
    s.head_dim = ps.head_dim, s.page_size = ps.page_size, s.value_format = ps.value_format;
    auto fixture = DecodeFixture::create(engine_, s, 0x5eed);
    if (!fixture)
      return fixture.takeError();
    inputs_ = std::make_unique<Inputs>();
    inputs_->fixture = std::move(*fixture);
    inputs_key_ = key;
  }
  const DecodeFixture &f = *inputs_->fixture;
  auto repeat = [&](int r) -> llvm::Error {
    for (int i = 0; i < kDecodeCallsPerTimedRepeat; ++i) {
      DecodeArgs a = f.args(r * kDecodeCallsPerTimedRepeat + i);
      a.spec = spec;
      a.splits = splits;
      if (auto e = engine_.decode(a))
        return e;
    }
    return llvm::Error::success();
  };
  auto t = timeRepeats(engine_.driver(), repeat, options_.warmup, options_.reps);
  if (!t)
    return t.takeError();
  t->median_ms /= kDecodeCallsPerTimedRepeat, t->min_ms /= kDecodeCallsPerTimedRepeat, t->max_ms /= kDecodeCallsPerTimedRepeat;
  return *t;
}

} // namespace fa4jit::runtime
