#pragma once
// Pieces every family's emitter shares, and the per-family entry points emitter.cpp dispatches to.
#include <string>

#include "fa4jit/codegen/baked_dims.h"
#include "fa4jit/codegen/emitter.h"

namespace fa4jit::detail {

// "// ..." lines: what the file is, the canonical spec JSON and its hash, and the run-time
// arguments, so a reader of an NVRTC log or a cache entry knows exactly what was built.
std::string emitHeaderComment(const KernelSpec &spec, const std::string &kernel_name, const DimensionSplit &split);

// `struct <name> { static constexpr <type> <member> = <value>; // note ... };`
std::string emitConfigStruct(const DimensionSplit &split, const std::string &struct_name);

// Quantized attention kernels' second pass, <kernel_name>_nonfinite_rows (templates/fa4jit/
// attention/nonfinite_rows.cuh): appended to `source` and to `k.entries`.
void emitNonFiniteRowsEntry(const KernelSpec &spec, const DimensionSplit &split, const std::string &config_struct,
                            EmittedKernel &k);

// Family emitters: the spec is valid and `split` is its splitDimensions().
llvm::Expected<EmittedKernel> emitQuantize(const KernelSpec &spec, const DimensionSplit &split);
llvm::Expected<EmittedKernel> emitAttention(const KernelSpec &spec, const DimensionSplit &split);
llvm::Expected<EmittedKernel> emitBackward(const KernelSpec &spec, const DimensionSplit &split);
llvm::Expected<EmittedKernel> emitMerge(const KernelSpec &spec, const DimensionSplit &split);
llvm::Expected<EmittedKernel> emitPaged(const KernelSpec &spec, const DimensionSplit &split);

} // namespace fa4jit::detail
