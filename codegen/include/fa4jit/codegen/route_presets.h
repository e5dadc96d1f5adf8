#pragma once
// The route presets users name: a route (how P and V are formed and fed) with a Q/K storage format.
//   bf16         BF16 Q, K, V, P
//   nvfp8        NVFP4 Q/K, FP8 E4M3 P and V
//   directp      NVFP4 Q/K, MXFP4 P (Direct-P) and V
//   fp8          E4M3 Q/K, FP8 E4M3 P and V (large logits: docs/ACCURACY.md, operand formats)
//   fp8-directp  E4M3 Q/K, MXFP4 P (Direct-P) and V
// The E4M3 Q/K presets run on the sm_90a wgmma kernels (docs/NUMERICS.md §1.4).
#include <string>
#include <vector>

#include "fa4jit/codegen/spec.h"
#include "llvm/Support/Error.h"

namespace fa4jit {

struct RoutePreset {
  Route route = Route::DirectP;
  QkFormat qk_format = QkFormat::Nvfp4;
  bool operator==(const RoutePreset &o) const { return route == o.route && qk_format == o.qk_format; }
};

// Every preset, in the order above.
const std::vector<RoutePreset> &routePresets();
std::string toString(const RoutePreset &preset);
// How an attention spec's Q and K are quantized: NVFP4, or E4M3 rows carrying the kernel's
// qk_widen_shift (docs/NUMERICS.md §1.4). The engine's own quantization and every caller that
// quantizes Q and K beforehand for a spec take it from here.
struct QkQuantization {
  QuantFormat format = QuantFormat::Nvfp4;
  int code_shift = 0; // E4M3 rows only
};
QkQuantization qkQuantizationOf(const AttentionSpec &spec);

// A preset by name; the error lists the names.
llvm::Expected<RoutePreset> parseRoutePreset(llvm::StringRef name);

// The presets that run on `target`, fastest first by the measured forward (route "auto" takes the
// first whose predicted accuracy meets its budget when nothing was timed): Direct-P before FP8 P,
// within each NVFP4 Q/K before E4M3 at equal speed (fewer bytes kept), bf16 last.
std::vector<RoutePreset> routePreferenceOrder(Target target);

} // namespace fa4jit
