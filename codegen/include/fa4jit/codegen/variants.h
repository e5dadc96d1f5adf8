#pragma once
// Every kernel the generator can emit: CI compiles each for its target without spills
// (`fa4jit compile --all`, tests/runtime/test_compile_all_variants.cpp), and
// tests/codegen/golden/variants.txt pins the list.
#include <vector>

#include "fa4jit/codegen/spec.h"

namespace fa4jit {

// Every variant of one family for one target. Attention variants are empty until the family's
// templates are available to the emitter (attentionTemplatesAvailable()).
std::vector<KernelSpec> enumerateQuantizeVariants(Target target);
std::vector<KernelSpec> enumerateAttentionVariants(Target target);
// The attention backward's variants (sm_90a only): per head dim and mask the default, and without
// the mask the deterministic, saved-NVFP4 Q/K, MXFP4 P/V and other-tile variants.
std::vector<KernelSpec> enumerateBackwardVariants(Target target);
// Merge-states kernels: per state type and head dim, on every target.
std::vector<KernelSpec> enumerateMergeVariants(Target target);
// Paged KV cache modules (append, decode, combine): per head dim, page size, decode warps and V
// format.
std::vector<KernelSpec> enumeratePagedKvVariants(Target target);

// All families for the given targets (all four targets when empty).
std::vector<KernelSpec> enumerateVariants(const std::vector<Target> &targets = {});

} // namespace fa4jit
