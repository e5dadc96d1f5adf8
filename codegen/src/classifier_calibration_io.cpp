// Reading calibration scores (docs/CALIBRATION.md): a small text format with a header and one
// row of raw scores q.k per line.
#include <cmath>
#include <cstdlib>
#include <string>

#include "fa4jit/codegen/classifier_fit.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

namespace fa4jit::fit {

namespace {

llvm::Error lineError(llvm::StringRef source, int line, const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s:%d: %s", source.str().c_str(),
                                 line, msg.c_str());
}

// Parses one number; "-inf" (any case) is a masked key. NaN and +inf are rejected.
bool parseScore(llvm::StringRef tok, float &out, bool &is_nan, bool &is_pos_inf) {
  is_nan = is_pos_inf = false;
  if (tok.equals_insensitive("-inf")) {
    out = -INFINITY;
    return true;
  }
  std::string s = tok.str();
  char *end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size())
    return false;
  is_nan = std::isnan(v);
  is_pos_inf = std::isinf(v) && v > 0;
  out = static_cast<float>(v);
  if (!is_nan && !is_pos_inf && std::isinf(out) && std::isfinite(v))
    is_pos_inf = v > 0; // beyond FP32: as bad as +inf; a huge negative score is a masked key
  return true;
}

} // namespace

llvm::Expected<CalibrationScores> parseCalibrationScores(llvm::StringRef text, llvm::StringRef source) {
  CalibrationScores cal;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  text.split(lines, '\n');
  bool magic = false, in_scores = false;
  llvm::SmallVector<llvm::StringRef, 0> toks;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    llvm::StringRef l = lines[i].split('#').first.trim();
    if (l.empty())
      continue;
    if (!magic) {
      if (l != "fa4jit-calibration 1")
        return lineError(source, line, "expected the header line 'fa4jit-calibration 1'");
      magic = true;
      continue;
    }
    toks.clear();
    llvm::SplitString(l, toks);
    if (!in_scores) {
      if (toks.size() == 1 && toks[0] == "scores") {
        if (cal.head_dim == 0 || cal.seqlen == 0)
          return lineError(source, line, "'scores' before 'head_dim' and 'seqlen'");
        in_scores = true;
        continue;
      }
      if (toks.size() != 2)
        return lineError(source, line, "expected 'key value' in the header, got '" + l.str() + "'");
      if (toks[0] == "head_dim" || toks[0] == "seqlen") {
        int v = 0;
        if (toks[1].getAsInteger(10, v) || v < 1)
          return lineError(source, line, toks[0].str() + " must be a positive integer, got '" + toks[1].str() + "'");
        (toks[0] == "head_dim" ? cal.head_dim : cal.seqlen) = v;
      } else if (toks[0] == "softmax_scale") {
        float v = 0;
        bool nan = false, pinf = false;
        if (!parseScore(toks[1], v, nan, pinf) || nan || !std::isfinite(v) || v <= 0)
          return lineError(source, line, "softmax_scale must be a finite number > 0, got '" + toks[1].str() + "'");
        cal.softmax_scale = v;
      } else {
        return lineError(source, line, "unknown header key '" + toks[0].str() + "' (head_dim, seqlen, softmax_scale, scores)");
      }
      continue;
    }
    if (static_cast<int>(toks.size()) != cal.seqlen)
      return lineError(source, line, "row has " + std::to_string(toks.size()) + " scores, expected seqlen = " + std::to_string(cal.seqlen));
    for (std::size_t k = 0; k < toks.size(); ++k) {
      float v = 0;
      bool nan = false, pinf = false;
      if (!parseScore(toks[k], v, nan, pinf))
        return lineError(source, line, "score " + std::to_string(k + 1) + " '" + toks[k].str() + "' is not a number");
      if (nan)
        return lineError(source, line, "score " + std::to_string(k + 1) + " is NaN");
      if (pinf)
        return lineError(source, line, "score " + std::to_string(k + 1) + " is +inf or beyond FP32 (use -inf for masked keys)");
      cal.scores.push_back(v);
    }
  }
  if (!magic)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: empty calibration file",
                                   source.str().c_str());
  if (!in_scores || cal.scores.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: no score rows",
                                   source.str().c_str());
  // Logits this large in the exp2 domain make every row one-hot (keys more than ~150 below a
  // row's maximum have P = 0 in FP32): a fit to them is meaningless, so they are an error, not a
  // useless answer. Usually the scores are already scaled, or softmax_scale is off by orders of
  // magnitude.
  const double scale = calibrationSoftmaxScale(cal);
  for (std::size_t i = 0; i < cal.scores.size(); ++i) {
    const double t = static_cast<double>(cal.scores[i]) * scale * M_LOG2E;
    if (std::isfinite(cal.scores[i]) && std::fabs(t) > kMaxCalibrationLogit)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "%s: row %zu, key %zu: score %g times softmax_scale %g is %g in the exp2 domain, beyond +-%g: every row "
          "would be one-hot and no classifier can be fitted; check softmax_scale and whether the scores are already "
          "scaled",
          source.str().c_str(), i / std::size_t(cal.seqlen) + 1, i % std::size_t(cal.seqlen) + 1,
          double(cal.scores[i]), scale, t, kMaxCalibrationLogit);
  }
  return cal;
}

llvm::Expected<CalibrationScores> readCalibrationFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return llvm::createStringError(buf.getError(), "cannot read calibration file %s: %s",
                                   path.c_str(), buf.getError().message().c_str());
  return parseCalibrationScores((*buf)->getBuffer(), path);
}

} // namespace fa4jit::fit
