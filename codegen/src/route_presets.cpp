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
