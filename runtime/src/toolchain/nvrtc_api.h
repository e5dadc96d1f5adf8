#pragma once
// Private: NVRTC's entry points as dlsym'ed function pointers, typed from nvrtc.h.
#include <nvrtc.h>

#define FA4JIT_NVRTC_FUNCTIONS(X)                                                                  \
  X(nvrtcVersion)                                                                                  \
  X(nvrtcGetErrorString)                                                                           \
  X(nvrtcGetNumSupportedArchs)                                                                     \
  X(nvrtcGetSupportedArchs)                                                                        \
  X(nvrtcCreateProgram)                                                                            \
  X(nvrtcDestroyProgram)                                                                           \
  X(nvrtcCompileProgram)                                                                           \
  X(nvrtcGetCUBINSize)                                                                             \
  X(nvrtcGetCUBIN)                                                                                 \
  X(nvrtcGetProgramLogSize)                                                                        \
  X(nvrtcGetProgramLog)

namespace fa4jit::runtime {

struct NvrtcApi {
#define FA4JIT_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  FA4JIT_NVRTC_FUNCTIONS(FA4JIT_NVRTC_MEMBER)
#undef FA4JIT_NVRTC_MEMBER
  // Optional (NVRTC >= 12.8): precompiled-header status; null when absent.
  decltype(&::nvrtcGetPCHCreateStatus) nvrtcGetPCHCreateStatus = nullptr;
};

} // namespace fa4jit::runtime
