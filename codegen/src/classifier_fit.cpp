// Fitting the Direct-P classifier: a fixed grid over (alpha, beta), then a fixed local
// refinement; the mixed kind repeats a local search per candidate y_split.
#include "fa4jit/codegen/classifier_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fa4jit/codegen/formats.h"

namespace fa4jit::fit {

device::DirectPCoefficients directpCoefficients(const ClassifierSpec &c) {
  device::DirectPCoefficients k{};
  k.kind = static_cast<int>(c.kind); // the device numbering is ClassifierKind's (directp.cuh)
  k.alpha = c.alpha;
  k.beta = c.beta;
  for (int i = 0; i < 7; ++i)
    k.theta[i] = c.thresholds[i];
  k.y_split = c.y_split;
  for (int i = 0; i < 4; ++i)
    k.piece[i] = c.pieces[i];
  return k;
}

namespace {

// Per row: y = x - e_b of every visible key, 2^e_b of its block, and the exact weights w
// (normalized), sorted by y, with prefix sums of s = 2^e_b, s^2 and s*w. Everything that does
// not depend on the classifier is computed once; a classifier whose code is monotone in y then
// costs a few binary searches per row instead of a pass over the keys.
struct PreparedRow {
  std::vector<float> y;            // ascending
  std::vector<double> block_scale; // 2^e_b per key
  std::vector<double> w;
  std::vector<double> ps, ps2, psw; // prefix sums, size n + 1
  double w2 = 0;                    // sum w^2
};

void finishRow(PreparedRow &p, double wsum) {
  const std::size_t n = p.y.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i)
    order[i] = i;
  // Stable, so equal y keep key order and the sums are reproducible.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p.y[a] < p.y[b]; });
  PreparedRow q;
  q.ps.assign(n + 1, 0.0);
  q.ps2.assign(n + 1, 0.0);
  q.psw.assign(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = order[i];
    const double w = p.w[j] / wsum;
    q.y.push_back(p.y[j]);
    q.block_scale.push_back(p.block_scale[j]);
    q.w.push_back(w);
    q.w2 += w * w;
    q.ps[i + 1] = q.ps[i] + p.block_scale[j];
    q.ps2[i + 1] = q.ps2[i] + p.block_scale[j] * p.block_scale[j];
    q.psw[i + 1] = q.psw[i] + p.block_scale[j] * w;
  }
  p = std::move(q);
}

std::vector<PreparedRow> prepare(const ScoreRows &rows) {
  std::vector<PreparedRow> out;
  const int n = rows.row_length;
  for (int r = 0; r < rows.rows(); ++r) {
    const float *t = rows.t.data() + static_cast<std::size_t>(r) * n;
    float m = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < n; ++j)
      m = std::fmax(m, t[j]);
    if (m == -std::numeric_limits<float>::infinity())
      continue; // no visible key
    PreparedRow p;
    double wsum = 0;
    for (int b0 = 0; b0 < n; b0 += 32) {
      const int b1 = std::min(n, b0 + 32);
      float bmax = -std::numeric_limits<float>::infinity();
      for (int j = b0; j < b1; ++j)
        bmax = std::fmax(bmax, t[j] - m);
      if (bmax == -std::numeric_limits<float>::infinity())
        continue;
      const int eb = device::directpBlockExponent(bmax);
      for (int j = b0; j < b1; ++j) {
        if (t[j] == -std::numeric_limits<float>::infinity())
          continue;
        const float x = t[j] - m;
        p.y.push_back(x - static_cast<float>(eb));
        p.block_scale.push_back(std::ldexp(1.0, eb));
        p.w.push_back(std::exp2(static_cast<double>(x)));
        wsum += p.w.back();
      }
    }
    finishRow(p, wsum);
    out.push_back(std::move(p));
  }
  return out;
}

struct Sums {
  double s = 0, sp2 = 0, spw = 0;
};

// Keys [lo, hi) of a row whose code is non-decreasing in y there: binary-search where the code
// reaches each value c (exactly, with the classifier itself) and add the segments' prefix sums.
template <typename Code>
void addMonotone(const PreparedRow &p, std::size_t lo, std::size_t hi, Code code, Sums &sum) {
  std::size_t start[9];
  start[0] = lo;
  for (int c = 1; c <= 7; ++c)
    start[c] = static_cast<std::size_t>(
        std::partition_point(p.y.begin() + lo, p.y.begin() + hi, [&](float y) { return code(y) < c; }) -
        p.y.begin());
  start[8] = hi;
  for (int c = 1; c <= 7; ++c) {
    const std::size_t a = start[c], b = start[c + 1];
    if (a >= b)
      continue;
    const double mag = formats::kE2M1Magnitude[c];
    sum.s += mag * (p.ps[b] - p.ps[a]);
    sum.sp2 += mag * mag * (p.ps2[b] - p.ps2[a]);
    sum.spw += mag * (p.psw[b] - p.psw[a]);
  }
}

Sums rowSums(const device::DirectPCoefficients &k, const PreparedRow &p) {
  Sums sum;
  const std::size_t n = p.y.size();
  auto code = [&](float y) { return device::directpCode(k, y); };
  if (k.kind == 0 || (k.kind == 1 && k.alpha > 0) || (k.kind == 3 && k.piece[0] > 0 && k.piece[2] > 0)) {
    addMonotone(p, 0, n, code, sum);
  } else if (k.kind == 2 && k.alpha > 0) {
    // Affine below the split, exp2 + round to nearest above: monotone on each side.
    const std::size_t split = static_cast<std::size_t>(
        std::partition_point(p.y.begin(), p.y.end(), [&](float y) { return y < k.y_split; }) - p.y.begin());
    addMonotone(p, 0, split, code, sum);
    addMonotone(p, split, n, code, sum);
  } else {
    for (std::size_t j = 0; j < n; ++j) {
      const double v = formats::kE2M1Magnitude[code(p.y[j])] * p.block_scale[j];
      sum.s += v;
      sum.sp2 += v * v;
      sum.spw += v * p.w[j];
    }
  }
  return sum;
}

double objective(const device::DirectPCoefficients &k, const std::vector<PreparedRow> &rows,
                 FitObjective kind) {
  if (rows.empty())
    return 0;
  double total = 0;
  for (const PreparedRow &p : rows) {
    const Sums sum = rowSums(k, p);
    // An all-zero row loses everything.
    if (!(sum.s > 0)) {
      total += 1.0;
      continue;
    }
    if (kind == FitObjective::Cosine) {
      total += std::fmax(1.0 - sum.spw / std::sqrt(sum.sp2 * p.w2), 0.0);
      continue;
    }
    // sum (P/S - w)^2 = sum P^2/S^2 - 2 sum P w / S + sum w^2.
    total += std::fmax((sum.sp2 / (sum.s * sum.s) - 2 * sum.spw / sum.s + p.w2) / p.w2, 0.0);
  }
  return total / static_cast<double>(rows.size());
}

double nativeFraction(const std::vector<PreparedRow> &rows, float y_split) {
  std::size_t n = 0, native = 0;
  for (const PreparedRow &p : rows) {
    n += p.y.size();
    for (float y : p.y)
      native += y >= y_split ? 1 : 0;
  }
  return n ? static_cast<double>(native) / static_cast<double>(n) : 0.0;
}

struct Search {
  const std::vector<PreparedRow> &rows;
  FitObjective kind;
  ClassifierSpec best;
  double best_obj = std::numeric_limits<double>::infinity();
  int evaluations = 0;

  void consider(ClassifierSpec c) {
    ++evaluations;
    const double obj = objective(directpCoefficients(c), rows, kind);
    if (obj < best_obj) { // strict: ties keep the earlier point, so the result is reproducible
      best_obj = obj;
      best = c;
    }
  }

  // (alpha, beta) over [a0, a1] x [b0, b1] with the given steps, y_split fixed.
  void grid(ClassifierSpec base, float a0, float a1, float as, float b0, float b1, float bs) {
    const int na = as > 0 ? static_cast<int>(std::floor((a1 - a0) / as + 0.5f)) : 0;
    const int nb = static_cast<int>(std::floor((b1 - b0) / bs + 0.5f));
    for (int i = 0; i <= na; ++i)
      for (int j = 0; j <= nb; ++j) {
        base.alpha = a0 + i * as;
        base.beta = b0 + j * bs;
        consider(base);
      }
  }

  void refine(int rounds, float as, float bs, bool fit_alpha) {
    for (int r = 0; r < rounds; ++r) {
      as *= 0.5f;
      bs *= 0.5f;
      const ClassifierSpec c = best;
      const float a_step = fit_alpha ? as : 0.0f;
      grid(c, c.alpha - 2 * a_step, c.alpha + 2 * a_step, a_step, c.beta - 2 * bs, c.beta + 2 * bs, bs);
    }
  }
};

} // namespace

double classifierObjective(const ClassifierSpec &classifier, const ScoreRows &rows,
                           FitObjective kind) {
  return objective(directpCoefficients(classifier), prepare(rows), kind);
}

llvm::Expected<FitResult> fitClassifier(const ScoreRows &rows, const FitOptions &o) {
  if (o.kind == ClassifierKind::Threshold)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the threshold classifier has no coefficients to fit");
  if (!(o.alpha_step > 0) || !(o.beta_step > 0) || o.alpha_max < o.alpha_min ||
      o.beta_max < o.beta_min || o.alpha_min <= 0 || o.refine_rounds < 0 ||
      (o.kind == ClassifierKind::Mixed && o.y_splits.empty()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "classifier fit grid is empty or ill-formed (alpha [%g, %g] step "
                                   "%g, beta [%g, %g] step %g)",
                                   o.alpha_min, o.alpha_max, o.alpha_step, o.beta_min, o.beta_max,
                                   o.beta_step);
  const std::vector<PreparedRow> prepared = prepare(rows);
  if (prepared.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no score row with a visible key to fit the classifier to");
  Search s{prepared, o.objective, {}, std::numeric_limits<double>::infinity(), 0};
  ClassifierSpec base;
  base.kind = ClassifierKind::Affine;
  const float a0 = o.fit_alpha ? o.alpha_min : o.fixed_alpha;
  const float a1 = o.fit_alpha ? o.alpha_max : o.fixed_alpha;
  const float as = o.fit_alpha ? o.alpha_step : 0.0f;
  s.grid(base, a0, a1, as, o.beta_min, o.beta_max, o.beta_step);
  s.refine(o.refine_rounds, o.alpha_step, o.beta_step, o.fit_alpha);

  if (o.kind == ClassifierKind::Mixed) {
    // Around the affine optimum, per y_split: the native exp2 covers the top codes, so the
    // affine part may prefer a slightly different line.
    const ClassifierSpec affine = s.best;
    s.best_obj = std::numeric_limits<double>::infinity();
    // y < 3 always (x <= 0, e_b = floor(max x) - 2), so a split of 3 never takes the native
    // exp2: the fallback when no listed split fits the budget.
    std::vector<float> splits;
    for (float split : o.y_splits)
      if (nativeFraction(prepared, split) <= o.max_native_fraction)
        splits.push_back(split);
    if (splits.empty())
      splits.push_back(3.0f);
    for (float split : splits) {
      ClassifierSpec c = affine;
      c.kind = ClassifierKind::Mixed;
      c.y_split = split;
      const float aw = o.fit_alpha ? 2 * o.alpha_step : 0.0f;
      s.grid(c, c.alpha - aw, c.alpha + aw, o.fit_alpha ? o.alpha_step : 0.0f, c.beta - 8 * o.beta_step,
             c.beta + 8 * o.beta_step, o.beta_step);
    }
    s.refine(o.refine_rounds, o.alpha_step, o.beta_step, o.fit_alpha);
  }

  FitResult r;
  r.classifier = s.best;
  r.objective = s.best_obj;
  ClassifierSpec threshold;
  threshold.kind = ClassifierKind::Threshold;
  r.threshold_objective = objective(directpCoefficients(threshold), prepared, o.objective);
  r.evaluations = s.evaluations;
  if (r.classifier.kind == ClassifierKind::Mixed)
    r.native_fraction = nativeFraction(prepared, r.classifier.y_split);
  return r;
}

} // namespace fa4jit::fit
