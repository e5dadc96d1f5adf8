#pragma once
// `fa4jit bench --variants`: named changes applied to the kernel the engine would run, so that
// one call times a kernel beside versions of it that leave a stage out or take another classifier,
// tile or consumer order.
#include "fa4jit/codegen/spec.h"

#include <llvm/Support/Error.h>

#include <optional>
#include <string>
#include <vector>

namespace fa4jit::tools {

// One variant: "default", or names joined with '+', each one of
//   a tile field's bench name (spec_fields.h: e.g. serial | overlap, pingpong | no-pingpong,
//                             in-kernel | prewidened | tensor-map, keys128, rows192, stages3, poly8)
//   slack0 .. slack8          the range guard's slack (log2 units a tile max may pass the row max
//                             before O is rescaled; FP8-fed P takes offset 8 - N)
//   piecewise | threshold | affine   the Direct-P classifier (affine: fitted to Gaussian scores)
//   skip-loads | skip-qk | skip-softmax | skip-pv | softmax-twice   (StageAblation; wrong results)
// Returns the changed spec, or nullopt where the variant does not apply to this route (affine on
// nvfp8) or kernel (overlap on mma.sync); an unknown name is an error.
llvm::Expected<std::optional<KernelSpec>> applyBenchVariant(const KernelSpec &base, const std::string &variant,
                                                            int seqlen, bool causal);

// Checks every name of every variant (before any GPU work).
llvm::Error checkBenchVariants(const std::vector<std::string> &variants);

} // namespace fa4jit::tools
