// The autotuner's candidate specs for one attention shape (candidates.h).
#include "fa4jit/codegen/candidates.h"

#include <algorithm>
#include <set>

#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/alternatives.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/resource_model.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include <fmt/format.h>

namespace fa4jit {

int seqlenBucket(int seqlen) {
  int b = 1;
  while (b < seqlen && b < (1 << 30))
    b <<= 1;
  return b;
}

namespace {

llvm::Error fail(const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// Fitted coefficients per classifier kind, computed once per enumeration.
struct FittedClassifiers {
  std::optional<ClassifierSpec> affine, mixed;
  std::string affine_error, mixed_error;
};

FittedClassifiers fitClassifiers(const CandidateSpace &space, bool causal, int seqlen_bucket) {
  FittedClassifiers out;
  const bool want_affine = std::count(space.classifiers.begin(), space.classifiers.end(), ClassifierKind::Affine);
  const bool want_mixed = std::count(space.classifiers.begin(), space.classifiers.end(), ClassifierKind::Mixed);
  if (!want_affine && !want_mixed)
    return out;
  fit::ScoreRows rows;
  if (space.fit_scores) {
    rows = *space.fit_scores;
  } else {
    fit::GaussianScoreModel model;
    model.seqlen = std::clamp(seqlen_bucket, 32, kFitMaxSeqlen);
    model.causal = causal;
    auto sampled = fit::sampleGaussianScores(model);
    if (!sampled) {
      out.affine_error = out.mixed_error = llvm::toString(sampled.takeError());
      return out;
    }
    rows = std::move(*sampled);
  }
  for (ClassifierKind kind : {ClassifierKind::Affine, ClassifierKind::Mixed}) {
    if (!(kind == ClassifierKind::Affine ? want_affine : want_mixed))
      continue;
    fit::FitOptions options;
    options.kind = kind;
    options.objective = space.fit_objective;
    auto fitted = fit::fitClassifier(rows, options);
    auto &slot = kind == ClassifierKind::Affine ? out.affine : out.mixed;
    auto &error = kind == ClassifierKind::Affine ? out.affine_error : out.mixed_error;
    if (fitted)
      slot = fitted->classifier;
    else
      error = llvm::toString(fitted.takeError());
  }
  return out;
}

// Every reason the spec cannot be a candidate, or empty: the spec rules, the resource model, then
// the emitter (which applies each template's own limits, as its static_asserts would).
std::string pruneReason(const KernelSpec &spec, int seqlen_bucket, bool is_heuristic) {
  std::vector<std::string> why = specViolations(spec);
  if (why.empty())
    why = estimateResources(spec).violations;
  if (why.empty())
    if (auto emitted = emitKernel(spec); !emitted)
      why.push_back("template: " + llvm::toString(emitted.takeError()));
  // A tile longer than the bucket's keys or rows only masks padding; the heuristic is kept as the
  // reference every other candidate is compared with.
  const TileSpec &t = spec.attention.tile;
  if (why.empty() && !is_heuristic && (t.shape.block_n > std::max(32, seqlen_bucket) || t.shape.block_m > std::max(16, seqlen_bucket)))
    why.push_back(fmt::format("tile: block {0}x{1} exceeds the sequence bucket {2}", t.shape.block_m, t.shape.block_n,
                              seqlen_bucket));
  std::string text;
  for (const std::string &w : why)
    text += (text.empty() ? "" : "; ") + w;
  return text;
}

// The kernels that can serve a shape, each with its base spec (the heuristic's numerics) and the
// tiles its template accepts.
enum class KernelKind { MmaSync, Wgmma, Tcgen05 };

struct KernelBase {
  KernelKind kind;
  KernelSpec base;
};

std::vector<KernelBase> kernelsFor(const KernelSpec &heuristic, bool all) {
  const AttentionSpec &a = heuristic.attention;
  KernelSpec mma = heuristic;
  if (isTcgen05Attention(mma)) {
    // Blackwell's fallback: the Hopper-style widening on mma.sync (TMEM unused).
    mma.attention.operands.qk_widening = Widening::E4m3;
    mma.attention.operands.v_widening = Widening::E4m3;
    mma.attention.tmem = TmemPlanRef{};
  }
  mma = withAttentionSchedule(mma, AttentionSchedule::MmaSync);
  std::vector<KernelBase> out;
  const KernelKind first = isTcgen05Attention(heuristic)                                        ? KernelKind::Tcgen05
                           : a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized ? KernelKind::Wgmma
                                                                                        : KernelKind::MmaSync;
  out.push_back({first, first == KernelKind::MmaSync ? mma : heuristic});
  if (!all)
    return out;
  if (first != KernelKind::MmaSync)
    out.push_back({KernelKind::MmaSync, mma});
  if (first == KernelKind::MmaSync && heuristic.target == Target::Sm90a)
    out.push_back({KernelKind::Wgmma, withAttentionSchedule(mma, AttentionSchedule::WgmmaWarpSpecialized)});
  return out;
}

// Tile variants of one kernel's base, in a fixed order (the base's own tile first).
std::vector<KernelSpec> tilesOf(const KernelBase &k, const CandidateSpace &space) {
  std::vector<KernelSpec> out{k.base};
  switch (k.kind) {
  case KernelKind::MmaSync:
    for (int w : space.warps)
      for (int n : space.block_n) {
        KernelSpec s = k.base;
        s.attention.tile.shape.warps = w;
        s.attention.tile.shape.block_m = 16 * w;
        s.attention.tile.shape.block_n = n;
        out.push_back(s);
      }
    break;
  case KernelKind::Wgmma:
    for (int n : space.block_n)
      for (int st : space.stages) {
        KernelSpec s = k.base;
        s.attention.tile.shape.block_n = n;
        s.attention.tile.pipeline.stages = st;
        s.attention.tile.pipeline.overlap = st >= 2;
        s.attention.tile.pipeline.pingpong = s.attention.tile.pipeline.pingpong && st >= 2;
        out.push_back(s);
      }
    for (KernelSpec &alt : wgmmaScheduleAlternatives(k.base)) // consumer order, turns, staging
      out.push_back(std::move(alt));
    break;
  case KernelKind::Tcgen05: // one tile shape (its TMEM plan is recorded in the spec)
    break;
  }
  return out;
}

} // namespace

std::string candidateLabel(const KernelSpec &spec) {
  const AttentionSpec &a = spec.attention;
  const char *kernel = isTcgen05Attention(spec)                                        ? "tcgen05"
                       : a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized ? "wgmma"
                                                                                    : "mma";
  std::string label = fmt::format("{0} m{1} n{2} w{3}", kernel, a.tile.shape.block_m, a.tile.shape.block_n, a.tile.shape.warps);
  if (a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized || isTcgen05Attention(spec))
    label += fmt::format(" st{0}", a.tile.pipeline.stages);
  if (a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized)
    label += std::string(a.tile.pipeline.overlap ? " overlap" : " serial") + (a.tile.pipeline.pingpong ? " pingpong" : "") +
             " " + toString(a.tile.staging.kv) +
             (a.tile.softmax.mma_row_sum ? " mma-sum" : "") + (a.tile.schedule.persistent ? " persistent" : "") +
             (a.tile.schedule.kv_multicast ? " multicast" : "") + (a.tile.softmax.thread_key_blocks ? " thread-blocks" : "") +
             (a.tile.softmax.scores_fp16 ? " fp16-scores" : "") +
             (fusesWidening(a) ? " fused-widening" : "");
  if (a.route != Route::Bf16)
    label += std::string(" ") + toString(a.operands.qk_widening);
  if (a.route == Route::DirectP) {
    label += std::string(" ") + toString(a.classifier.kind);
    if (a.classifier.kind != ClassifierKind::Threshold && a.classifier.kind != ClassifierKind::Piecewise)
      label += "(" + formatFloat(a.classifier.alpha) + "," + formatFloat(a.classifier.beta) +
               (a.classifier.kind == ClassifierKind::Mixed ? "," + formatFloat(a.classifier.y_split) : "") + ")";
  }
  label += a.guard.kind == GuardKind::SampledAnchor ? " anchor" : " online";
  return label;
}

llvm::Expected<CandidateList> enumerateAttentionCandidates(Route route, int head_dim, bool causal, Target target,
                                                           int seqlen_bucket, const CandidateSpace &space) {
  if (seqlen_bucket < 1)
    return fail(fmt::format("sequence-length bucket {0} is not positive", seqlen_bucket));
  const KernelSpec heuristic = defaultAttentionSpec(route, head_dim, causal, target);
  if (llvm::Error e = validateSpec(heuristic))
    return fail(fmt::format("no attention kernel for route {0}, head dim {1} on {2}: {3}", toString(route), head_dim,
                            toString(target), llvm::toString(std::move(e))));
  const bool quantized = route != Route::Bf16;
  const bool fp8 = targetLimits(target).fp8_mma;
  const FittedClassifiers fitted =
      route == Route::DirectP ? fitClassifiers(space, causal, seqlen_bucket) : FittedClassifiers{};

  CandidateList out;
  std::set<std::string> seen;
  auto add = [&](const KernelSpec &spec, const std::string &reason_if_any) {
    const KernelSpec canon = canonicalize(spec);
    if (!seen.insert(toJson(canon)).second)
      return;
    AttentionCandidate c{canon, candidateLabel(canon), reason_if_any};
    if (c.reason.empty())
      c.reason = pruneReason(canon, seqlen_bucket, out.kept.empty() && out.pruned.empty());
    (c.reason.empty() ? out.kept : out.pruned).push_back(std::move(c));
  };
  // Applies one classifier kind; a kind whose fit failed yields a pruned candidate with the error.
  auto withClassifier = [&](KernelSpec s, ClassifierKind kind, std::string *reason) {
    if (kind == ClassifierKind::Threshold || kind == ClassifierKind::Piecewise) { // nothing to fit
      s.attention.classifier = ClassifierSpec{};
      s.attention.classifier.kind = kind;
    } else {
      const auto &fit = kind == ClassifierKind::Affine ? fitted.affine : fitted.mixed;
      if (fit) {
        s.attention.classifier = *fit;
      } else {
        s.attention.classifier.kind = kind;
        *reason = "classifier fit: " + (kind == ClassifierKind::Affine ? fitted.affine_error : fitted.mixed_error);
      }
    }
    return s;
  };

  add(heuristic, "");
  out.heuristic = out.kept.empty() ? -1 : 0;
  const std::vector<ClassifierKind> kinds =
      route == Route::DirectP ? space.classifiers : std::vector<ClassifierKind>{heuristic.attention.classifier.kind};
  std::vector<GuardKind> guards = space.guards.empty() ? std::vector<GuardKind>{heuristic.attention.guard.kind}
                                                       : space.guards;
  for (const KernelBase &k : kernelsFor(heuristic, space.all_kernels)) {
    // Only the mma.sync template reads a BF16 widening of Q/K (wgmma and tcgen05 fix theirs).
    std::vector<Widening> widenings{k.base.attention.operands.qk_widening};
    if (k.kind == KernelKind::MmaSync && quantized && fp8)
      for (Widening w : space.qk_widenings)
        if (std::find(widenings.begin(), widenings.end(), w) == widenings.end())
          widenings.push_back(w);
    const std::vector<KernelSpec> tiles = tilesOf(k, space);
    if (space.exhaustive) {
      for (const KernelSpec &t : tiles)
        for (Widening qk : widenings)
          for (ClassifierKind c : kinds)
            for (GuardKind g : guards) {
              std::string reason;
              KernelSpec s = withClassifier(t, c, &reason);
              s.attention.operands.qk_widening = qk;
              s.attention.guard.kind = g;
              add(s, reason);
            }
      continue;
    }
    // Every tile with every classifier (the classifier's cost scales with the S tile), then each
    // other numeric option on the kernel's base tile.
    for (const KernelSpec &t : tiles)
      for (ClassifierKind c : kinds) {
        std::string reason;
        add(withClassifier(t, c, &reason), reason);
      }
    for (Widening qk : widenings) {
      KernelSpec s = k.base;
      s.attention.operands.qk_widening = qk;
      add(s, "");
    }
    for (GuardKind g : guards) {
      KernelSpec s = k.base;
      s.attention.guard.kind = g;
      add(s, "");
    }
  }
  return out;
}

} // namespace fa4jit
