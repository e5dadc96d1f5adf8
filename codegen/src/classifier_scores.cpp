// Score rows for the classifier fit: a Gaussian score model of a shape, or captured scores.
#include <cmath>
#include <limits>

#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/gaussian_rng.h"

namespace fa4jit::fit {

llvm::Expected<ScoreRows> sampleGaussianScores(const GaussianScoreModel &model) {
  if (model.seqlen < 1 || model.rows < 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "Gaussian score model needs seqlen >= 1 and rows >= 1 (got %d, %d)",
                                   model.seqlen, model.rows);
  if (!std::isfinite(model.score_sigma) || model.score_sigma < 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "Gaussian score model sigma %g must be finite and >= 0",
                                   model.score_sigma);
  ScoreRows out;
  out.row_length = model.seqlen;
  out.t.assign(static_cast<std::size_t>(model.rows) * model.seqlen,
               -std::numeric_limits<float>::infinity());
  GaussianRng rng(model.seed);
  for (int r = 0; r < model.rows; ++r) {
    // Causal rows spread evenly over the sequence see a prefix of the keys.
    const int row = static_cast<int>((r + 0.5) * model.seqlen / model.rows);
    const int visible = model.causal ? row + 1 : model.seqlen;
    float *t = out.t.data() + static_cast<std::size_t>(r) * model.seqlen;
    for (int j = 0; j < visible; ++j)
      t[j] = static_cast<float>(rng.normal() * model.score_sigma * M_LOG2E);
  }
  return out;
}

double calibrationSoftmaxScale(const CalibrationScores &cal) {
  return cal.softmax_scale != 0.0f ? static_cast<double>(cal.softmax_scale)
                                   : 1.0 / std::sqrt(static_cast<double>(cal.head_dim));
}

ScoreRows scoresFromCalibration(const CalibrationScores &cal) {
  const double scale = calibrationSoftmaxScale(cal);
  ScoreRows out;
  out.row_length = cal.seqlen;
  out.t.resize(cal.scores.size());
  for (std::size_t i = 0; i < cal.scores.size(); ++i)
    out.t[i] = static_cast<float>(cal.scores[i] * scale * M_LOG2E);
  return out;
}

} // namespace fa4jit::fit
