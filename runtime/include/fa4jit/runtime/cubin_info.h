#pragma once
// What a compiled cubin says about itself: the SM it was built for and, per kernel, registers,
// static shared memory, stack frame (local memory: spills and local arrays) and launch bounds.
// NVRTC reports none of this, and a cache hit has no compile log, so fa4jit reads it from the
// ELF (`.nv.info*` attribute sections, `.nv.shared.<kernel>` sizes, the ptxas note).
#include "fa4jit/runtime/gpu_arch.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fa4jit::runtime {

struct CubinKernelInfo {
  std::string name;            // symbol name (extern "C" names are unmangled)
  int registers = -1;          // per thread (EIATTR_REGCOUNT); -1 if absent
  int static_shared_bytes = 0; // __shared__ arrays, without the 1 KiB sm_90+ system reservation
  int stack_frame_bytes = 0;   // per thread local memory (EIATTR_FRAME_SIZE); > 0 often means spills
  int max_threads = 0;         // __launch_bounds__ max threads per block (EIATTR_MAX_THREADS); 0 = none
  int param_bytes = 0;         // kernel parameter block size (EIATTR_CBANK_PARAM_SIZE)
  int cluster_dims[3] = {0, 0, 0}; // __cluster_dims__ if compiled in; zeros = none
  // Not in the ELF: filled from the ptxas --verbose log when the cubin was compiled in this
  // process (compiler.h); -1 = unknown (e.g. a cache hit).
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
  // ptxas C7513/C7520 etc.: "wgmma.mma_async instructions are serialized due to ..." (the
  // warpgroup MMAs of this kernel then wait for each other); -1 unknown, 0 no, 1 yes.
  int wgmma_serialized = -1;
};

struct CubinInfo {
  GpuArch arch;               // major/minor from e_flags, suffix from the ptxas "-arch" note
  bool suffix_known = false;  // false if the note is missing (suffix then reads None)
  int elf_abi_version = 0;
  std::vector<CubinKernelInfo> kernels; // sorted by name

  const CubinKernelInfo *find(llvm::StringRef kernel_name) const;
};

// Parses a cubin (ELF64, EM_CUDA). Errors name what is malformed; never reads out of bounds.
llvm::Expected<CubinInfo> readCubinInfo(llvm::ArrayRef<uint8_t> cubin);

} // namespace fa4jit::runtime
