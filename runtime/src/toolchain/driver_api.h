#pragma once
// Private: the Driver API entry points fa4jit uses, as function pointers typed from cuda.h.
// cuda.h #defines many names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime
// -> cuEventElapsedTime_v2, ...); the members below therefore carry the versioned names and
// types, and they are resolved with cuGetProcAddress(<base name>, CUDA_VERSION), which returns
// exactly the ABI version these headers declare.
#include <cuda.h>

#include "llvm/Support/Error.h"

#define FA4JIT_DRIVER_FUNCTIONS(X)                                                                 \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDeviceTotalMem)                                                                              \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxSynchronize)                                                                              \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncSetAttribute)                                                                            \
  X(cuFuncGetAttribute)                                                                            \
  X(cuLaunchKernelEx)                                                                              \
  X(cuOccupancyMaxActiveClusters)                                                                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                   \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemcpyHtoD)                                                                                  \
  X(cuMemcpyDtoH)                                                                                  \
  X(cuMemcpyDtoD)                                                                                  \
  X(cuMemsetD8)                                                                                    \
  X(cuMemsetD8Async)                                                                               \
  X(cuMemsetD16Async)                                                                              \
  X(cuMemsetD32Async)                                                                              \
  X(cuMemsetD2D16Async)                                                                            \
  X(cuPointerGetAttributes)                                                                        \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamBeginCapture)                                                                          \
  X(cuStreamEndCapture)                                                                            \
  X(cuGraphInstantiateWithFlags)                                                                   \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphExecDestroy)                                                                            \
  X(cuGraphDestroy)                                                                                \
  X(cuStreamSynchronize)                                                                           \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)                                                                            \
  X(cuTensorMapEncodeTiled)

namespace fa4jit::runtime {

struct DriverApi {
#define FA4JIT_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  FA4JIT_DRIVER_FUNCTIONS(FA4JIT_DRIVER_MEMBER)
#undef FA4JIT_DRIVER_MEMBER
};

// A CUresult as an error naming the call, the result's name and its description (CudaDriver::check,
// and the callers that hold only the function table).
llvm::Error checkDriverResult(const DriverApi &api, int cu_result, const char *call);

} // namespace fa4jit::runtime
