// EngineTimingSource (tune_timing.h): CUDA-event timing of one candidate through the Engine.
#include "fa4jit/runtime/tune_timing.h"

#include "fa4jit/codegen/formats.h"
#include "fa4jit/codegen/gaussian_rng.h"
#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/runtime/engine.h"
#include "tune_common.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <optional>

namespace fa4jit::runtime {

namespace {
// Random BF16 pattern repeated over a large tensor: generating every element of a 64M-element
// tensor on one core would take longer than timing all candidates; what matters for speed is
// that values are Gaussian (never zeros, realistic rescale frequency), not that they never repeat.
constexpr size_t kPatternElements = size_t(1) << 22;
} // namespace

struct EngineTimingSource::Inputs {
  struct Set {
    DeviceBuffer q, k, v, o, lse;
    std::optional<QuantizedTensor> qq, qk, qv;
  };
  std::vector<Set> sets;
};

TimingStats summarizeRepeats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  TimingStats t;
  t.reps = int(ms.size());
  const size_t n = ms.size();
  t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  const double q1 = ms[(n - 1) / 4], q3 = ms[(3 * (n - 1) + 3) / 4];
  t.noise = t.median_ms > 0 ? (q3 - q1) / t.median_ms : 0.0;
  return t;
}

EngineTimingSource::EngineTimingSource(Engine &engine, EngineTimingOptions options)
    : engine_(engine), options_(options) {}
EngineTimingSource::~EngineTimingSource() = default;

std::string EngineTimingSource::describe() const {
  return llvm::formatv("cuda-events warmup {0} reps {1} median, input sets {2}, cold-l2 {3}{4}", options_.warmup,
                       options_.reps, options_.input_sets, options_.cold_l2 ? "on" : "off",
                       options_.from_bf16 ? ", from bf16" : "")
      .str();
}

llvm::Expected<EngineTimingSource::Inputs &> EngineTimingSource::inputsFor(const KernelSpec &spec,
                                                                           const TuneProblem &p) {
  const AttentionSpec &a = spec.attention;
  const QkQuantization qk = qkQuantizationOf(a);
  const std::string key = llvm::formatv("{0} {1} d{2} qk {3} {4}", p.str(), toString(a.route), a.head_dim,
                                        toString(qk.format), qk.code_shift)
                              .str();
  auto &slot = inputs_[key];
  if (slot)
    return *slot;
  auto in = std::make_unique<Inputs>();
  std::vector<uint16_t> pattern(kPatternElements);
  GaussianRng rng(0x7153);
  for (uint16_t &x : pattern)
    x = formats::floatToBF16(float(rng.normal()));
  const size_t nq = size_t(p.batch) * p.heads_q * p.seqlen_q * a.head_dim;
  const size_t nk = size_t(p.batch) * p.heads_kv * p.seqlen_k * a.head_dim;
  CudaDriver &drv = engine_.driver();
  auto make = [&](size_t n, size_t offset, DeviceBuffer &dst) -> llvm::Error {
    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; ++i)
      bits[i] = pattern[(i + offset) % kPatternElements];
    auto buf = DeviceBuffer::allocate(drv, n * 2);
    if (!buf)
      return buf.takeError();
    if (auto e = buf->copyFromHost(bits.data(), n * 2))
      return e;
    dst = std::move(*buf);
    return llvm::Error::success();
  };
  for (int s = 0; s < std::max(1, options_.input_sets); ++s) {
    Inputs::Set set;
    if (auto e = make(nq, 7919u * (3 * s + 1), set.q))
      return e;
    if (auto e = make(nk, 7919u * (3 * s + 2), set.k))
      return e;
    if (auto e = make(nk, 7919u * (3 * s + 3), set.v))
      return e;
    auto o = DeviceBuffer::allocate(drv, nq * 2);
    if (!o)
      return o.takeError();
    set.o = std::move(*o);
    auto lse = DeviceBuffer::allocate(drv, size_t(p.batch) * p.heads_q * p.seqlen_q * 4);
    if (!lse)
      return lse.takeError();
    set.lse = std::move(*lse);
    if (a.route != Route::Bf16 && !options_.from_bf16) {
      auto q = engine_.quantize(TensorDesc::contiguous(set.q.address(), DType::BF16, p.batch, p.heads_q, p.seqlen_q,
                                                       a.head_dim),
                                qk.format, "q", nullptr, qk.code_shift);
      if (!q)
        return q.takeError();
      auto k = engine_.quantize(TensorDesc::contiguous(set.k.address(), DType::BF16, p.batch, p.heads_kv, p.seqlen_k,
                                                       a.head_dim),
                                qk.format, "k", nullptr, qk.code_shift);
      if (!k)
        return k.takeError();
      auto v = engine_.quantize(TensorDesc::contiguous(set.v.address(), DType::BF16, p.batch, p.heads_kv, p.seqlen_k,
                                                       a.head_dim),
                                a.route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead, "v");
      if (!v)
        return v.takeError();
      set.qq = std::move(*q), set.qk = std::move(*k), set.qv = std::move(*v);
    }
    in->sets.push_back(std::move(set));
  }
  slot = std::move(in);
  return *slot;
}

llvm::Expected<TimingStats> EngineTimingSource::time(const KernelSpec &spec, const TuneProblem &p) {
  if (options_.reps < 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "timing needs at least one repeat");
  auto inputs = inputsFor(spec, p);
  if (!inputs)
    return inputs.takeError();
  if (options_.cold_l2 && !flush_) {
    const size_t bytes = std::max<size_t>(size_t(2) * size_t(std::max(0, engine_.device().l2_bytes)), size_t(64) << 20);
    auto buf = DeviceBuffer::allocate(engine_.driver(), bytes);
    if (!buf)
      return buf.takeError();
    flush_ = std::make_unique<DeviceBuffer>(std::move(*buf));
  }
  const AttentionSpec &a = spec.attention;
  auto launch = [&](int rep) -> llvm::Error {
    Inputs::Set &s = inputs->sets[size_t(rep) % inputs->sets.size()];
    const TensorDesc o =
        TensorDesc::contiguous(s.o.address(), DType::BF16, p.batch, p.heads_q, p.seqlen_q, a.head_dim);
    if (a.route == Route::Bf16 || options_.from_bf16) {
      ForwardArgs f;
      f.q = TensorDesc::contiguous(s.q.address(), DType::BF16, p.batch, p.heads_q, p.seqlen_q, a.head_dim);
      f.k = TensorDesc::contiguous(s.k.address(), DType::BF16, p.batch, p.heads_kv, p.seqlen_k, a.head_dim);
      f.v = TensorDesc::contiguous(s.v.address(), DType::BF16, p.batch, p.heads_kv, p.seqlen_k, a.head_dim);
      f.o = o, f.lse = s.lse.address(), f.route = a.route, f.causal = a.causal, f.spec = spec;
      return engine_.forward(f);
    }
    QuantizedForwardArgs f;
    f.q = &*s.qq, f.k = &*s.qk, f.v = &*s.qv;
    f.o = o, f.lse = s.lse.address(), f.route = a.route, f.causal = a.causal, f.spec = spec;
    return engine_.forward(f);
  };
  // (before every timed repeat, outside its events: L2 overwritten, so no repeat finds K/V there)
  const std::function<llvm::Error(int)> flush = [&](int i) {
    return flush_ ? flush_->fill(std::uint8_t(i)) : llvm::Error::success();
  };
  return timeRepeats(engine_.driver(), launch, options_.warmup, options_.reps, flush);
}

} // namespace fa4jit::runtime
