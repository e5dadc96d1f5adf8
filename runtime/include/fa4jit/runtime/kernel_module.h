#pragma once
// A compiled cubin loaded into a device's primary context, and launches of its kernels by name.
// The cubin's architecture is checked against the device BEFORE the driver sees it, so a wrong
// target reads "kernel compiled for sm_100a cannot run on NVIDIA H200 (sm_90)".
#include "fa4jit/runtime/cubin_info.h"
#include "fa4jit/runtime/driver_library.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fa4jit::runtime {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned dynamic_shared_bytes = 0; // above 48 KiB the launch opts the kernel in automatically
  Dim3 cluster;                      // thread-block cluster (sm_90+); 1x1x1 = no cluster attribute
  void *stream = nullptr;            // CUstream (Stream::handle()); null = legacy default stream
};

class KernelModule;

class Kernel {
public:
  const std::string &name() const { return info_.name; }
  const CubinKernelInfo &info() const { return info_; }
  // Allows this kernel up to `bytes` of dynamic shared memory (cuFuncSetAttribute).
  llvm::Error setMaxDynamicSharedMemory(int bytes);
  // args[i] points at the i-th kernel parameter's value (as cuLaunchKernelEx wants). Checks the
  // block against __launch_bounds__ and shared memory against the device before launching.
  llvm::Error launch(const LaunchConfig &config, llvm::ArrayRef<void *> args);
  // How many clusters of config.cluster can be resident on the device at once with this block and
  // shared memory (cuOccupancyMaxActiveClusters; the grid is ignored): a persistent grid of
  // clusters larger than this would run a second wave. Remembered per (block, cluster, shared).
  llvm::Expected<int> maxActiveClusters(const LaunchConfig &config);
  // How many CTAs of config.block and config.dynamic_shared_bytes one SM holds at once
  // (cuOccupancyMaxActiveBlocksPerMultiprocessor; grid and cluster ignored). Remembered per
  // (block, shared).
  llvm::Expected<int> maxActiveBlocksPerSm(const LaunchConfig &config);

private:
  // Opts the kernel in to `bytes` of dynamic shared memory where that is above the default 48 KiB
  // and above what it was allowed so far.
  llvm::Error allowDynamicShared(unsigned bytes);
  // Opts the kernel in to clusters of more than 8 CTAs (non-portable) where `ctas` needs it.
  llvm::Error allowClusterSize(unsigned ctas);
  friend class KernelModule;
  Kernel(KernelModule *module, void *function, CubinKernelInfo info)
      : module_(module), function_(function), info_(std::move(info)) {}
  KernelModule *module_;
  void *function_; // CUfunction
  CubinKernelInfo info_;
  int max_dynamic_shared_set_ = 48 * 1024;
  bool non_portable_cluster_set_ = false;
  struct ClusterOccupancy {
    unsigned threads = 0, cluster = 0, shared = 0;
    int clusters = -1;
  } cluster_occupancy_;
  struct BlockOccupancy {
    unsigned threads = 0, shared = 0;
    int blocks = -1;
  } block_occupancy_;
  std::mutex mutex_;
};

class KernelModule {
public:
  // Makes the device's primary context current, checks the cubin's SM against the device and
  // loads it (cuModuleLoadDataEx, with the driver's error log in any error).
  static llvm::Expected<std::unique_ptr<KernelModule>>
  load(CudaDriver &driver, int device_ordinal, llvm::ArrayRef<std::uint8_t> cubin);
  ~KernelModule();
  KernelModule(const KernelModule &) = delete;
  KernelModule &operator=(const KernelModule &) = delete;

  // The kernel with this (unmangled, extern "C") name; looked up once, then cached.
  llvm::Expected<Kernel &> kernel(llvm::StringRef name);
  const CubinInfo &info() const { return info_; }
  const DeviceInfo &device() const { return device_; }

private:
  friend class Kernel;
  KernelModule(CudaDriver &driver, DeviceInfo device, CubinInfo info)
      : driver_(driver), device_(std::move(device)), info_(std::move(info)) {}
  CudaDriver &driver_;
  DeviceInfo device_;
  CubinInfo info_;
  void *module_ = nullptr; // CUmodule
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels_;
};

} // namespace fa4jit::runtime
