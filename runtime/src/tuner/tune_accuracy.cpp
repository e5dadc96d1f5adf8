// Accuracy probes of the autotuner (tuner.h): CPU models against FP64, or a classifier against
// captured scores.
#include "fa4jit/codegen/gaussian_rng.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"
#include "fa4jit/runtime/tuner.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <mutex>

namespace fa4jit::runtime {

namespace {

struct SampleProblem {
  std::vector<float> q, k, v;
  cpu::AttentionProblem problem;
  cpu::RowSelection selection;
  cpu::AttentionResult reference;
};

} // namespace

struct CpuModelAccuracy::State {
  std::mutex mutex;
  // By (head dim, causal, softmax scale bits): the inputs and their FP64 reference.
  std::map<std::string, std::unique_ptr<SampleProblem>> problems;
  // By the canonical spec with the numerics-neutral fields (warps, block_m) reset.
  std::map<std::string, double> memo;
};

CpuModelAccuracy::CpuModelAccuracy(CpuAccuracyOptions options)
    : options_(options), state_(std::make_unique<State>()) {}
CpuModelAccuracy::~CpuModelAccuracy() = default;

std::string CpuModelAccuracy::describe() const {
  return llvm::formatv("cpu-model vs fp64: s{0} rows {1} heads {2} sigma {3} seed {4}", options_.seqlen, options_.rows,
                       options_.heads, options_.sigma, options_.seed)
      .str();
}

llvm::Expected<double> CpuModelAccuracy::cosine(const KernelSpec &spec) {
  if (spec.family != KernelFamily::AttentionForward)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "accuracy: not an attention spec");
  const AttentionSpec &a = spec.attention;
  KernelSpec neutral = spec;
  neutral.attention.tile.shape.warps = 1;
  neutral.attention.tile.shape.block_m = 16;
  const std::string memo_key = toJson(neutral);
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (auto it = state_->memo.find(memo_key); it != state_->memo.end())
    return it->second;

  const std::string problem_key = llvm::formatv("d{0} c{1} s{2}", a.head_dim, a.causal ? 1 : 0,
                                                formatFloat(a.softmax_scale))
                                      .str();
  auto &slot = state_->problems[problem_key];
  if (!slot) {
    auto p = std::make_unique<SampleProblem>();
    cpu::AttentionShape shape;
    shape.batch = 1;
    shape.heads_q = shape.heads_kv = options_.heads;
    shape.seqlen_q = shape.seqlen_k = options_.seqlen;
    shape.head_dim = a.head_dim;
    const size_t n = size_t(shape.heads_q) * shape.seqlen_q * shape.head_dim;
    GaussianRng rng(options_.seed + uint64_t(a.head_dim) * 7 + (a.causal ? 1 : 0));
    for (auto *buf : {&p->q, &p->k, &p->v}) {
      buf->resize(n);
      for (float &x : *buf)
        x = float(options_.sigma * rng.normal());
    }
    p->problem.shape = shape;
    p->problem.q = cpu::TensorRef::contiguous(p->q.data(), shape.heads_q, shape.seqlen_q, shape.head_dim);
    p->problem.k = cpu::TensorRef::contiguous(p->k.data(), shape.heads_kv, shape.seqlen_k, shape.head_dim);
    p->problem.v = cpu::TensorRef::contiguous(p->v.data(), shape.heads_kv, shape.seqlen_k, shape.head_dim);
    // Rows spread over the sequence (causal rows see different prefixes), the last always in.
    const int rows = std::max(1, std::min(options_.rows, options_.seqlen));
    for (int i = 0; i < rows; ++i)
      p->selection.rows.push_back(rows == 1 ? options_.seqlen - 1
                                            : int((long(options_.seqlen - 1) * i) / (rows - 1)));
    cpu::ReferenceOptions ro;
    ro.causal = a.causal;
    ro.softmax_scale = a.softmax_scale;
    ro.selection = p->selection;
    auto ref = cpu::referenceAttention(p->problem, ro);
    if (!ref)
      return ref.takeError();
    p->reference = std::move(*ref);
    slot = std::move(p);
  }
  cpu::ModelOptions mo;
  mo.selection = slot->selection;
  auto model = cpu::runRouteModel(a, slot->problem, mo);
  if (!model)
    return model.takeError();
  const double cos = cpu::compareOutputs(model->result, slot->reference).cosine;
  state_->memo[memo_key] = cos;
  return cos;
}

llvm::Expected<double> CalibrationAccuracy::cosine(const KernelSpec &spec) {
  if (spec.attention.route != Route::DirectP)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "calibration scores judge Direct-P classifiers only; route %s has none",
                                   toString(spec.attention.route));
  return 1.0 - fit::classifierObjective(spec.attention.classifier, rows_, fit::FitObjective::Cosine);
}

} // namespace fa4jit::runtime
