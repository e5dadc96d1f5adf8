#pragma once
// GPU architectures as NVRTC spells them (sm_90a, sm_100a, sm_89, ...), and the rule that decides
// whether a cubin built for one can run on a device of a given compute capability. The rule is a
// pure function so it is tested without a GPU, and the loader applies it BEFORE handing a cubin
// to the driver (whose own error for a wrong-arch image is an unhelpful "no kernel image").
#include "fa4jit/codegen/spec.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <string>

namespace fa4jit::runtime {

// 'a' (arch-specific: wgmma/setmaxnreg on 9.0, tcgen05 on 10.0) runs only on exactly that
// compute capability; 'f' (family) runs on the same major with minor >= its own; plain SASS runs
// on the same major with minor >= its own (SASS is not forward compatible across majors).
enum class ArchSuffix : char { None = 0, ArchSpecific = 'a', Family = 'f' };

struct GpuArch {
  int major = 0;
  int minor = 0;
  ArchSuffix suffix = ArchSuffix::None;

  int smNumber() const { return major * 10 + minor; }
  std::string name() const; // "sm_90a"
  bool operator==(const GpuArch &o) const {
    return major == o.major && minor == o.minor && suffix == o.suffix;
  }
  bool operator!=(const GpuArch &o) const { return !(*this == o); }
};

// Parses "sm_90a", "sm_100f", "sm_89" (also "compute_" prefixes are refused: fa4jit always
// compiles to SASS so inline-asm errors surface at compile time, docs/ARCHITECTURE.md §8).
llvm::Expected<GpuArch> parseGpuArch(llvm::StringRef text);

// The architecture a codegen target compiles for.
GpuArch archForTarget(Target target);

// Device identity as far as arch compatibility is concerned.
struct DeviceArch {
  int cc_major = 0;
  int cc_minor = 0;
  std::string name; // "NVIDIA H200"; used only in messages
};

// Success if a cubin for `kernel` can run on `device`; otherwise an error such as
// "kernel compiled for sm_100a cannot run on NVIDIA H200 (sm_90)".
llvm::Error checkArchCompatible(const GpuArch &kernel, const DeviceArch &device);

} // namespace fa4jit::runtime
