#pragma once
// The tuner's alternatives to a default spec: the kernels it times beside the default.
#include <vector>

#include "fa4jit/codegen/spec.h"

namespace fa4jit {

// The wgmma kernel's alternatives to its default choices, each one decision of the sm_90a table
// taken the other way (with what that forces: a key tile that fits, the quad key blocks): the
// serial or overlapped loop, consumers taking turns or not, the other widening site, the other
// grid, the other consumer count and key tile, the other score accumulator, directp's key blocks
// and classifier pieces, nvfp8's polynomial exp2. Empty for other schedules.
std::vector<KernelSpec> wgmmaScheduleAlternatives(const KernelSpec &base);

} // namespace fa4jit
