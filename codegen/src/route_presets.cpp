#include "fa4jit/codegen/route_presets.h"

namespace fa4jit {

const std::vector<RoutePreset> &routePresets() {
  static const std::vector<RoutePreset> presets = {
      {Route::Bf16, QkFormat::Nvfp4},  {Route::Nvfp8, QkFormat::Nvfp4}, {Route::DirectP, QkFormat::Nvfp4},
      {Route::Nvfp8, QkFormat::E4m3},  {Route::DirectP, QkFormat::E4m3},
  };
  return presets;
}

std::string toString(const RoutePreset &p) {
  if (p.qk_format == QkFormat::Nvfp4 || p.route == Route::Bf16)
    return toString(p.route);
  return p.route == Route::Nvfp8 ? "fp8" : "fp8-directp";
}

QkQuantization qkQuantizationOf(const AttentionSpec &spec) {
  if (spec.operands.qk_format != QkFormat::E4m3)
    return {};
  return {QuantFormat::E4m3Rows, spec.operands.qk_widen_shift};
}

std::vector<RoutePreset> routePreferenceOrder(Target target) {
  // docs/BENCHMARKS.md: directp leads nvfp8 by 5-10% from 16k keys and ties it at 4k (D 64-256);
  // E4M3 Q/K run at their NVFP4 route's speed end to end on sm_90a (section "E4M3 Q/K presets");
  // bf16 runs at about 0.6x the FP8-fed routes from 16k keys.
  const bool e4m3_qk = target == Target::Sm90a; // (the sm_90a wgmma kernels only)
  std::vector<RoutePreset> order;
  if (target != Target::Sm80) // (the FP8-fed routes need FP8 tensor cores)
    for (Route route : {Route::DirectP, Route::Nvfp8}) {
      order.push_back({route, QkFormat::Nvfp4});
      if (e4m3_qk)
        order.push_back({route, QkFormat::E4m3});
    }
  order.push_back({Route::Bf16, QkFormat::Nvfp4});
  return order;
}

llvm::Expected<RoutePreset> parseRoutePreset(llvm::StringRef name) {
  std::string names;
  for (const RoutePreset &p : routePresets()) {
    if (name == toString(p))
      return p;
    names += (names.empty() ? "" : ", ") + toString(p);
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "unknown route '%s' (expected one of: %s)",
                                 name.str().c_str(), names.c_str());
}

} // namespace fa4jit
