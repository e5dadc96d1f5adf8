#pragma once
// The source emitter: a pure function from a KernelSpec to the text of one tiny instantiation
// file (docs/ARCHITECTURE.md §3, §10). The file includes the embedded template headers, defines
// the spec's baked constants as a config struct with named static constexpr members (baked_dims.h
// decides which), and defines the extern "C" __global__ entry points the driver looks up by name. A
// comment header carries the canonical spec JSON, so the source (and so the cache key) changes
// whenever the spec does. Compiling the text is the runtime's job (NVRTC), not codegen's.
#include <string>
#include <vector>

#include "fa4jit/codegen/spec.h"
#include "llvm/Support/Error.h"

namespace fa4jit {

// One extern "C" __global__ function of the generated module and how it is launched.
struct EntryPoint {
  std::string name;             // cuModuleGetFunction name
  int threads = 0;              // blockDim.x (the kernel's __launch_bounds__)
  int dynamic_shared_bytes = 0; // opt in with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES above 48 KiB
};

struct EmittedKernel {
  std::string name;                // kernelName(spec)
  std::vector<EntryPoint> entries; // in launch order (quantizers: the amax pass, the encode pass, then
                                   // the one-pass cluster and pipelined kernels where they exist)
  std::string source;              // the instantiation file, compile with --std=c++17 -I<templates root>
};

// The entry point of `kernel` whose name ends in `suffix` (a second pass, a one-pass kernel), or
// null where it has none.
const EntryPoint *entryWithSuffix(const EmittedKernel &kernel, llvm::StringRef suffix);

// Validates the spec, then generates. Same spec, same bytes: no time stamps, no addresses, no
// environment. Errors name the spec field (validation) or the missing template.
llvm::Expected<EmittedKernel> emitKernel(const KernelSpec &spec);

// The quantizers' one-pass kernel (templates/fa4jit/quantize/cluster_pass.cuh): the suffix of its
// entry point, which follows the two passes' where quantizeHasClusterPass(spec). It exists on the
// targets with thread-block clusters (sm_90a, sm_100a) for the formats whose codes need the head's
// maximum before any is written (NVFP4 and E4M3 rows, FP8 V^T); MXFP4 V^T is one pass without it.
inline constexpr const char *kQuantizeClusterSuffix = "_cluster";
bool quantizeHasClusterPass(const KernelSpec &spec);
// The pipelined one-pass kernel (templates/fa4jit/quantize/pipelined_pass.cuh) of NVFP4 and E4M3
// rows, on every target, where a row group of the spec's threads holds whole row-mask words.
inline constexpr const char *kQuantizePipelinedSuffix = "_pipelined";
bool quantizeHasPipelinedPass(const KernelSpec &spec);

// Whether the attention templates (fa4jit/attention/kernel.cuh) are embedded in this build.
bool attentionTemplatesAvailable();
// Whether the attention backward's templates (fa4jit/attention_backward/kernel.cuh) are embedded.
bool backwardTemplatesAvailable();

} // namespace fa4jit
