// Score rows for the classifier fit: a Gaussian score model of a shape, or captured scores.
#include <algorithm>
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

double calibrationLogitStd(const CalibrationScores &cal) {
  const double scale = calibrationSoftmaxScale(cal);
  double variance = 0;
  int rows = 0;
  for (int r = 0; r < cal.rows(); ++r) {
    const float *s = cal.scores.data() + static_cast<std::size_t>(r) * cal.seqlen;
    double sum = 0, sum2 = 0;
    int n = 0;
    for (int j = 0; j < cal.seqlen; ++j)
      if (std::isfinite(s[j])) {
        const double x = s[j] * scale;
        sum += x, sum2 += x * x, ++n;
      }
    if (n < 2)
      continue;
    const double mean = sum / n;
    variance += std::max(0.0, sum2 / n - mean * mean);
    ++rows;
  }
  return rows ? std::sqrt(variance / rows) : 0.0;
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
