#pragma once
// The tcgen05 (sm_100a) attention emitter, called by emit_attention.cpp for the specs
// isTcgen05Attention() selects.
#include "fa4jit/codegen/baked_dims.h"
#include "fa4jit/codegen/emitter.h"

namespace fa4jit::detail {

llvm::Expected<EmittedKernel> emitAttentionSm100(const KernelSpec &spec, const DimensionSplit &split);

} // namespace fa4jit::detail
