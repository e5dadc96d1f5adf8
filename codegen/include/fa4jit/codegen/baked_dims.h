#pragma once
// THE decision of which dimensions of a kernel are baked into its source and which are run-time
// arguments (as DeepGEMM's "which dims are compile-time"). The emitter writes the
// baked list as the template's config struct, verbatim; nothing else decides.
//
// Baked (a new kernel per value): everything that changes the instruction stream or a constant
// the inner loop folds: head dim, causal, route, widenings and shifts, tiles and warps, the
// softmax scale (folded with log2(e) and the widening shift into one FP32 constant), the range
// guard and the Direct-P classifier; for quantizers the format, layout, input type, key order,
// head dim and CTA size.
// Run time (one kernel serves all values): batch, heads (and so the GQA ratio), sequence lengths,
// strides, pointers and the quantizer's amax chunking. Shapes that vary per call would otherwise
// mean a compile per call; none of them changes the inner loop's code, only trip counts and
// addresses.
#include <string>
#include <vector>

#include "fa4jit/codegen/spec.h"
#include "llvm/Support/Error.h"

namespace fa4jit {

// One static constexpr member of the generated config struct.
struct BakedConstant {
  std::string name;  // member name the template reads, e.g. "head_dim"
  std::string type;  // C++ type in the family's device namespace, e.g. "int", "Route"
  std::string value; // C++ initializer, e.g. "128", "Route::DirectP", "0x1.715476p-3f"
  std::string note;  // readable value or reason, written as a comment (may be empty)
};

// One field of the family's params struct, the kernel's single by-value argument.
struct RuntimeArgument {
  std::string name;    // field name, e.g. "seqlen_k"
  std::string meaning; // what the caller puts there
};

struct DimensionSplit {
  KernelFamily family = KernelFamily::AttentionForward;
  std::string device_namespace;        // where the config struct and the params type live
  std::string params_type;             // e.g. "QuantizeParams" (in device_namespace)
  std::string params_header;           // e.g. "fa4jit/quantize/params.cuh"
  std::vector<BakedConstant> baked;    // in the order the config struct lists them
  std::vector<RuntimeArgument> runtime; // in params-struct order
};

// The split for a spec (validated first: an invalid spec is an error, not a split).
llvm::Expected<DimensionSplit> splitDimensions(const KernelSpec &spec);

// softmax_scale (1/sqrt(head_dim) when 0) times log2(e), rounded once to FP32, as NUMERICS.md
// §2.1's kscale (and the CPU models) compute it.
float log2SoftmaxScale(const AttentionSpec &a);
// The FP32 constant the attention kernel multiplies Q.K by before the per-head global scales:
// kscale, times 4^qk_widen_shift when NVFP4 Q/K are widened to E4M3 (exact).
float foldedScoreScale(const AttentionSpec &a);

// Exact C++ float literal (hex float, e.g. "0x1.8p+1f"; "0x0p+0f" for zero).
std::string cppFloatLiteral(float v);

} // namespace fa4jit
