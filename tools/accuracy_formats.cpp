// The format study over the accuracy grid (accuracy_formats.h).
#include "accuracy_formats.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/cpu/format_study.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"

#include <algorithm>

namespace fa4jit::tools {

llvm::Expected<std::vector<FormatAccuracyRow>>
runFormatAccuracy(const AccuracyGrid &g, const std::function<void(int, int)> &progress) {
  if (auto e = validateGrid(g))
    return e;
  std::vector<FormatAccuracyRow> out;
  const int total = static_cast<int>(g.sigmas.size() * g.seqlens.size() * g.head_dims.size() * g.causal.size());
  int done = 0;
  for (double sigma : g.sigmas)
    for (int seqlen : g.seqlens)
      for (int dim : g.head_dims)
        for (bool causal : g.causal) {
          // (the inputs and rows of runAccuracyGrid at this point)
          const std::size_t n = static_cast<std::size_t>(seqlen) * dim;
          const std::vector<float> q = gaussian(n, sigma, g.seed * 3 + 0);
          const std::vector<float> k = gaussian(n, sigma, g.seed * 3 + 1);
          const std::vector<float> v = gaussian(n, sigma, g.seed * 3 + 2);
          cpu::AttentionProblem p;
          p.shape = {1, 1, 1, seqlen, seqlen, dim};
          p.q = cpu::TensorRef::contiguous(q.data(), 1, seqlen, dim);
          p.k = cpu::TensorRef::contiguous(k.data(), 1, seqlen, dim);
          p.v = cpu::TensorRef::contiguous(v.data(), 1, seqlen, dim);
          cpu::RowSelection sel;
          sel.threads = g.threads;
          const int nrows = std::min(g.rows, seqlen);
          for (int i = 0; i < nrows; ++i)
            sel.rows.push_back(static_cast<int>((i + 0.5) * seqlen / nrows));
          cpu::ReferenceOptions ro;
          ro.causal = causal;
          ro.selection = sel;
          auto ref = cpu::referenceAttention(p, ro);
          if (!ref)
            return ref.takeError();
          auto add = [&](std::string label, bool kernel, const cpu::AttentionResult &r) {
            const cpu::Agreement a = cpu::compareOutputs(r, *ref);
            out.push_back({std::move(label), kernel, sigma, seqlen, dim, causal, a.cosine, a.rel_l2});
          };
          for (const cpu::FormatPair &pair : cpu::allFormatPairs()) {
            auto r = cpu::formatStudyAttention(pair, p, ro);
            if (!r)
              return r.takeError();
            add(cpu::toString(pair), false, *r);
          }
          for (Route route : {Route::Nvfp8, Route::DirectP}) {
            AttentionSpec spec;
            spec.head_dim = dim;
            spec.causal = causal;
            spec.route = route;
            if (route == Route::DirectP) {
              auto c = classifierForVariant("piecewise", sigma, seqlen, causal, g.seed);
              if (!c)
                return c.takeError();
              spec.classifier = *c;
            }
            applyRouteNumericsDefaults(spec);
            cpu::ModelOptions mo;
            mo.selection = sel;
            auto m = cpu::runRouteModel(spec, p, mo);
            if (!m)
              return m.takeError();
            add(std::string(toString(route)) + " kernel", true, m->result);
          }
          if (progress)
            progress(++done, total);
        }
  return out;
}

} // namespace fa4jit::tools
