#pragma once
// The autotuner's search space for one attention shape: the specs worth timing, in a fixed order
// (the heuristic's spec first), each with a short label; and the ones the resource model or the
// spec rules exclude before anything is compiled, each with the reason.
//
// Only fields a template honours are varied, per kernel that can serve the shape:
//  - mma.sync (templates/fa4jit/attention/config.cuh): warps (block_m = 16 * warps), block_n, the
//    Q/K widening of the quantized routes (it ignores `stages`; V is always fed as E4M3);
//  - wgmma-ws (sm_90a, FP8-fed routes; block_m 128 and 12 warps fixed): block_n, stages;
//  - tcgen05 (sm_100a, FP8/FP4-fed routes): its one tile shape, TMEM plan recorded in the spec;
// and for all of them the Direct-P classifier (kind and fitted coefficients) and the range guard.
// Every candidate is checked by the spec rules, the resource model and the emitter (which applies
// each template's limits) before it is kept.
#include <optional>
#include <string>
#include <vector>

#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/spec.h"

namespace fa4jit {

// Sequence lengths are tuned per power-of-two bucket: the smallest power of two >= seqlen (1 for
// seqlen <= 1). Kernels are baked per head dim, not per length, so one tuned spec serves a bucket.
int seqlenBucket(int seqlen);

struct CandidateSpace {
  std::vector<int> warps = {4, 2, 8};
  std::vector<int> block_n = {64, 128, 32, 192};
  std::vector<int> stages = {2, 3, 4}; // wgmma-ws ring depth
  std::vector<Widening> qk_widenings = {Widening::E4m3, Widening::Bf16}; // quantized routes
  std::vector<ClassifierKind> classifiers = {ClassifierKind::Piecewise, ClassifierKind::Threshold,
                                             ClassifierKind::Affine, ClassifierKind::Mixed}; // directp
  std::vector<GuardKind> guards = {GuardKind::SampledAnchor, GuardKind::OnlineExact};
  // Also search the kernels the heuristic did not pick (mma.sync beside wgmma-ws or tcgen05, and
  // wgmma-ws beside mma.sync on sm_90a).
  bool all_kernels = true;
  // false: every tile with every classifier (they interact: the classifier's cost scales with the
  // S tile), then each other numeric option on the heuristic's tile. true: the full product.
  bool exhaustive = false;
  // Scores the affine and mixed classifiers are fitted to (e.g. captured calibration rows); when
  // absent, a Gaussian score model of the bucket's length (at most kFitMaxSeqlen keys, 64 rows).
  std::optional<fit::ScoreRows> fit_scores;
  fit::FitObjective fit_objective = fit::FitObjective::Cosine;
};

inline constexpr int kFitMaxSeqlen = 8192;

struct AttentionCandidate {
  KernelSpec spec;
  std::string label;  // e.g. "mma m64 n128 w4 e4m3 affine(2.25,1.5) anchor"
  std::string reason; // why it was pruned (empty for kept candidates)
};

struct CandidateList {
  std::vector<AttentionCandidate> kept;   // kept[0] is the heuristic's spec unless it was pruned
  std::vector<AttentionCandidate> pruned; // with reasons
  int heuristic = -1;                     // index of the heuristic's spec in `kept` (0), or -1
};

// Candidates for (route, head_dim, causal, target) at sequence-length bucket `seqlen_bucket`.
// Deterministic: the same arguments give the same list in the same order. Errors: a shape the
// heuristic has no spec for (e.g. an FP8-fed route on sm_80, head dim 96).
llvm::Expected<CandidateList> enumerateAttentionCandidates(Route route, int head_dim, bool causal, Target target,
                                                           int seqlen_bucket, const CandidateSpace &space = {});

// The label of a spec as enumerateAttentionCandidates writes it.
std::string candidateLabel(const KernelSpec &spec);

} // namespace fa4jit
