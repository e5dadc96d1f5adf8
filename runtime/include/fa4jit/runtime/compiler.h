#pragma once
// NVRTC in-process compilation of a generated source to a SASS cubin (never PTX: compiling to
// PTX "succeeds" without assembling inline asm, so tcgen05/wgmma mistakes would surface only at
// load time on a GPU; docs/ARCHITECTURE.md §8). The embedded template headers are passed as in-memory
// headers, so a compile needs no files.
//
// Default flags, and why (they enter the cache key through normalizedOptions()):
//   -std=c++17
//   --fmad=false   : the CPU models (docs/NUMERICS.md) mirror every float operation; contracting
//                    `a*b + c` into an FFMA would change roundings the model cannot see, and P
//                    codes near a classifier threshold would differ. Kernels write fmaf() /
//                    __fmaf_rn() where they want an FFMA, and the model writes std::fma there.
//   no --use_fast_math: it implies -ftz=true, -prec-div=false and -prec-sqrt=false, changing `/`,
//                    sqrt and denormal results behind the model's back. Kernels that want MUFU
//                    exp2 or approximate division use explicit intrinsics / PTX (ex2.approx.ftz.f32,
//                    __fdividef), visible in the source and mirrored in the model.
//   -lineinfo      : source lines in the cubin for profilers and compute-sanitizer; no effect on
//                    the generated SASS.
//   --ptxas-options=--verbose : ptxas reports spill stores/loads per kernel in the log; the
//                    ELF does not carry spill counts (registers and stack frame it does).
#include "fa4jit/runtime/cubin_info.h"
#include "fa4jit/runtime/gpu_arch.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fa4jit::runtime {

struct CompileOptions {
  GpuArch arch = {9, 0, ArchSuffix::ArchSpecific};
  bool fast_math = false;     // --use_fast_math (see above for why it is off)
  bool fmad = false;          // --fmad (see above)
  bool line_info = true;      // -lineinfo
  bool ptxas_verbose = true;  // --ptxas-options=--verbose (spill counts in the log)
  int max_registers = 0;      // --maxrregcount; 0 = none (kernels prefer __launch_bounds__)
  std::vector<std::string> defines; // "NAME" or "NAME=VALUE" -> -DNAME[=VALUE]
  // Any other NVRTC flags. Refused: flags that a field above owns (architecture, std, fmad,
  // fast math, line info, maxrregcount) and precompiled-header flags (CompilerConfig owns those,
  // and they do not change the cubin).
  std::vector<std::string> extra;
};

// The exact NVRTC flags for `options`, sorted and deduplicated: equal option sets give equal
// lists, so the list can enter a cache key. Errors name a refused extra flag.
llvm::Expected<std::vector<std::string>> normalizedOptions(const CompileOptions &options);

struct InMemoryHeader {
  std::string name;     // include name, e.g. "fa4jit/test_helper.cuh"
  std::string contents;
};

struct CompileRequest {
  std::string name = "fa4jit_kernel.cu"; // program name in diagnostics and in the reproducer
  std::string source;
  CompileOptions options;
  // In addition to the embedded templates; a name equal to an embedded header is refused.
  std::vector<InMemoryHeader> headers;
};

struct CompilerConfig {
  // Failed compiles leave a reproducer directory here (source, every header, options, NVRTC log
  // and a script that reruns the compile with nvcc); "" writes none.
  std::string repro_dir;
  // NVRTC automatic precompiled headers (-pch; --pch-dir when pch_dir is set). These flags do
  // not change the cubin, so they are not part of normalizedOptions().
  bool precompiled_headers = false;
  std::string pch_dir;
  // NVRTC 12.9+ keeps its own cache of compiled programs (--no-cache turns it off). Off by
  // default: fa4jit's content-addressed cache already covers it, and a second, hidden cache makes
  // measured compile times (autotuner, `fa4jit compile`) meaningless.
  bool nvrtc_cache = false;
};

struct CompileResult {
  std::vector<std::uint8_t> cubin;  // ELF, EM_CUDA, for options.arch
  std::string log;                  // NVRTC/ptxas log (warnings, ptxas info)
  std::vector<std::string> options; // flags as passed to NVRTC (normalized + PCH flags)
  double seconds = 0.0;             // wall time of program creation, compile and cubin fetch
  CubinInfo info;                   // from the cubin, plus spill counts from the ptxas log
};

// Compiles one request. A failure's message carries the NVRTC log, the options and the source
// with line numbers, and names the reproducer directory (if config.repro_dir is set).
llvm::Expected<CompileResult> compile(const CompileRequest &request, const CompilerConfig &config = {});

// Fills spill_store_bytes/spill_load_bytes of `info` from a ptxas --verbose log (a cache hit
// re-reads the log stored with its cubin).
void addPtxasSpillCounts(llvm::StringRef log, CubinInfo &info);

// Compiles requests on up to `threads` threads (0 = one per hardware thread); results are in
// request order.
std::vector<llvm::Expected<CompileResult>> compileMany(llvm::ArrayRef<CompileRequest> requests,
                                                       const CompilerConfig &config,
                                                       unsigned threads);

} // namespace fa4jit::runtime
