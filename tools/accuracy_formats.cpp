// The format study over the accuracy grid (accuracy_formats.h).
#include "accuracy_formats.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/route_presets.h"
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
  llvm::Error walked = forEachGridPoint(g, progress, [&](double sigma, int seqlen, int dim, bool causal) -> llvm::Error {
    const GridPointInputs in = gridPointInputs(g, sigma, seqlen, dim, causal);
    const cpu::AttentionProblem &p = in.problem;
    const cpu::ReferenceOptions &ro = in.reference;
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
    for (const RoutePreset &preset : routePresets()) {
      const Route route = preset.route;
      if (route == Route::Bf16)
        continue;
      AttentionSpec spec;
      spec.head_dim = dim;
      spec.causal = causal;
      spec.route = route;
      spec.operands.qk_format = preset.qk_format;
      if (route == Route::DirectP) {
        auto c = classifierForVariant("piecewise", sigma, seqlen, causal, g.seed);
        if (!c)
          return c.takeError();
        spec.classifier = *c;
      }
      applyRouteNumericsDefaults(spec);
      cpu::ModelOptions mo;
      mo.selection = ro.selection;
      auto m = cpu::runRouteModel(spec, p, mo);
      if (!m)
        return m.takeError();
      add(toString(preset) + " kernel", true, m->result);
    }
    return llvm::Error::success();
  });
  if (walked)
    return walked;
  return out;
}

} // namespace fa4jit::tools
