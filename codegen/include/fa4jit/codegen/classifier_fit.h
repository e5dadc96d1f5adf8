#pragma once
// Fitting the Direct-P classifier (docs/NUMERICS.md §2.3) per shape: alpha, beta (and y_split for the
// mixed kind) that minimize the output error of the Direct-P softmax, either for a Gaussian
// score model of the shape or for scores captured from a real model (docs/CALIBRATION.md).
//
// Objectives: for a row with exact weights w_j = exp2(x_j) / sum exp2(x) and Direct-P weights
// w^_j = P_j / sum P (P as fed, the normalizer sums the same values), and values V independent
// of the scores with zero mean,
//  - RelativeSquaredError: sum (w^ - w)^2 / sum w^2 = E||O^ - O||^2 / E||O||^2;
//  - Cosine: 1 - sum w^ w / sqrt(sum w^2 * sum w^^2) = 1 - E[O^.O] / sqrt(E||O^||^2 E||O||^2),
//    blind to a row's overall scale (which the fed normalizer largely cancels).
// The fit minimizes the mean over the sampled rows. Deterministic: fixed seeds, a fixed grid,
// then a fixed local refinement; ties keep the first point in grid order.
#include <cstdint>
#include <string>
#include <vector>

#include "fa4jit/codegen/spec.h"
#include "fa4jit/directp.cuh"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace fa4jit::fit {

// The classifier constants as a kernel bakes them (templates/fa4jit/directp.cuh).
device::DirectPCoefficients directpCoefficients(const ClassifierSpec &c);

// Rows of log2-domain scores t = (q.k) * softmax_scale * log2(e); -inf marks a masked key.
struct ScoreRows {
  int row_length = 0;
  std::vector<float> t; // rows() x row_length, row-major
  int rows() const { return row_length ? static_cast<int>(t.size() / row_length) : 0; }
};

// Score model of a shape: q.k * softmax_scale ~ N(0, score_sigma^2) i.i.d. per key (natural-log
// units; for Q, K entries ~ N(0, s^2) and the default scale 1/sqrt(D), score_sigma = s^2).
// Causal rows see a prefix of the keys, as rows spread evenly over [0, seqlen).
struct GaussianScoreModel {
  int seqlen = 4096;
  double score_sigma = 1.0;
  bool causal = false;
  int rows = 64;
  uint64_t seed = 0x5eed;
};
llvm::Expected<ScoreRows> sampleGaussianScores(const GaussianScoreModel &model);

// Raw scores q.k captured from a model (before softmax_scale), see docs/CALIBRATION.md.
struct CalibrationScores {
  int head_dim = 0;
  int seqlen = 0;
  float softmax_scale = 0.0f; // 0 => 1/sqrt(head_dim)
  std::vector<float> scores;  // rows x seqlen; -inf = masked key
  int rows() const { return seqlen ? static_cast<int>(scores.size() / seqlen) : 0; }
};
// `source` names the text in error messages (a file path).
llvm::Expected<CalibrationScores> parseCalibrationScores(llvm::StringRef text, llvm::StringRef source);
llvm::Expected<CalibrationScores> readCalibrationFile(const std::string &path);
// The softmax scale of a calibration: its softmax_scale, else 1/sqrt(head_dim).
double calibrationSoftmaxScale(const CalibrationScores &cal);
// The largest |score * scale * log2 e| a calibration may hold (parseCalibrationScores refuses
// more): 2^16, far beyond the ~150 past which exp2 underflows, far below what makes rows one-hot
// by mistake (a softmax scale of 1e30, scores of 3e38).
inline constexpr double kMaxCalibrationLogit = 65536.0;
ScoreRows scoresFromCalibration(const CalibrationScores &cal);
// The logit scale of captured scores: the root of the mean, over rows with at least two visible
// keys, of the variance of score * softmax_scale within the row (softmax ignores a row's mean);
// the GaussianScoreModel's score_sigma, and route auto's logit_std. 0 without such a row.
double calibrationLogitStd(const CalibrationScores &cal);

enum class FitObjective : uint8_t { RelativeSquaredError, Cosine };

// Mean objective (above) of the Direct-P weights over the rows; rows with no visible key are
// skipped.
double classifierObjective(const ClassifierSpec &classifier, const ScoreRows &rows,
                           FitObjective objective = FitObjective::Cosine);

struct FitOptions {
  ClassifierKind kind = ClassifierKind::Affine; // Affine or Mixed (Threshold has nothing to fit)
  FitObjective objective = FitObjective::Cosine;
  bool fit_alpha = true;     // false: keep alpha = fixed_alpha, fit beta (and y_split)
  float fixed_alpha = 2.0f;
  float alpha_min = 1.0f, alpha_max = 4.0f, alpha_step = 0.25f;
  float beta_min = -2.0f, beta_max = 8.0f, beta_step = 0.125f;
  std::vector<float> y_splits = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f};
  // Mixed: the native exp2 costs MUFU throughput (the resource Direct-P saves), so a split is
  // only eligible if at most this fraction of the visible keys has y >= y_split. When none is,
  // y_split = 3 (above every y: the affine classifier alone).
  double max_native_fraction = 0.125;
  int refine_rounds = 2; // each halves the step around the best point (5x5 neighbourhood)
};

struct FitResult {
  ClassifierSpec classifier;
  double objective = 0;           // of the fitted classifier
  double threshold_objective = 0; // of the threshold classifier (exp2 + round to nearest)
  double native_fraction = 0;     // mixed: fraction of visible keys that take the native exp2
  int evaluations = 0;
};
llvm::Expected<FitResult> fitClassifier(const ScoreRows &rows, const FitOptions &options);

} // namespace fa4jit::fit
