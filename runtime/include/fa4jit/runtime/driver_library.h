#pragma once
// The CUDA driver (libcuda.so.1), opened lazily with dlopen: without a driver or a GPU the
// library still loads, and asking for the driver is a clear error, never a crash.
#include "fa4jit/runtime/gpu_arch.h"

#include <llvm/Support/Error.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fa4jit::runtime {

namespace detail {
class DynamicLibrary;
}
struct DriverApi; // function table; runtime/src/toolchain/driver_api.h (uses cuda.h types)

struct DriverSearch {
  std::vector<std::string> candidates = {"libcuda.so.1", "libcuda.so"};
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name; // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t total_memory_bytes = 0;
  int max_shared_per_block_optin = 0; // bytes a kernel may use after opting in
  int max_shared_per_sm = 0;
  int l2_bytes = 0;

  DeviceArch arch() const { return {cc_major, cc_minor, name}; }
  std::string smName() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

class CudaDriver {
public:
  // The process-wide driver: dlopen + cuInit on first use (thread-safe). Failures are remembered:
  // "no CUDA driver: ..." (libcuda absent) or "no CUDA device: ..." (cuInit found none).
  static llvm::Expected<CudaDriver &> get();
  static llvm::Expected<std::unique_ptr<CudaDriver>> load(const DriverSearch &search);
  ~CudaDriver();

  int driverVersion() const { return driver_version_; } // e.g. 13000
  std::string driverVersionString() const;              // "13.0"
  const std::string &path() const;                      // libcuda file loaded
  int deviceCount() const { return device_count_; }
  llvm::Expected<DeviceInfo> device(int ordinal) const;

  // Retains the device's primary context (once per device, released with the driver) and makes
  // it current on the calling thread. Loads, allocations and launches use the current context.
  llvm::Error makeCurrent(int ordinal);

  // Turns a CUresult into an error naming the call, the result's name and its description:
  // "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)".
  llvm::Error check(int cu_result, const char *call) const;
  const DriverApi &api() const { return *api_; }

private:
  CudaDriver();
  std::unique_ptr<detail::DynamicLibrary> lib_;
  std::unique_ptr<DriverApi> api_;
  int driver_version_ = 0;
  int device_count_ = 0;
  std::mutex contexts_mutex_;
  std::vector<void *> retained_contexts_; // CUcontext per ordinal, null until retained
};

} // namespace fa4jit::runtime
