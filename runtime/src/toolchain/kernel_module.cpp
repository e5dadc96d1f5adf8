#include "fa4jit/runtime/kernel_module.h"

#include "driver_api.h"

#include <fmt/format.h>

namespace fa4jit::runtime {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

constexpr unsigned kDefaultDynamicSharedLimit = 48 * 1024;

} // namespace

llvm::Expected<std::unique_ptr<KernelModule>>
KernelModule::load(CudaDriver &driver, int device_ordinal, llvm::ArrayRef<std::uint8_t> cubin) {
  llvm::Expected<CubinInfo> info = readCubinInfo(cubin);
  if (!info)
    return info.takeError();
  llvm::Expected<DeviceInfo> device = driver.device(device_ordinal);
  if (!device)
    return device.takeError();
  if (llvm::Error e = checkArchCompatible(info->arch, device->arch()))
    return e;
  if (llvm::Error e = driver.makeCurrent(device_ordinal))
    return e;

  std::unique_ptr<KernelModule> self(new KernelModule(driver, std::move(*device), std::move(*info)));
  char log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof log - 1))};
  CUmodule module = nullptr;
  if (llvm::Error e = driver.check(driver.api().cuModuleLoadDataEx(&module, cubin.data(), 2, options, values),
                                   "cuModuleLoadDataEx")) {
    std::string message = llvm::toString(std::move(e)) + " loading a " +
                          self->info_.arch.name() + " cubin on " + self->device_.name;
    if (log[0])
      message += "; driver log: " + std::string(log);
    return error(message);
  }
  self->module_ = module;
  return self;
}

KernelModule::~KernelModule() {
  kernels_.clear();
  if (module_)
    driver_.api().cuModuleUnload(static_cast<CUmodule>(module_));
}

llvm::Expected<Kernel &> KernelModule::kernel(llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(name);
  if (it != kernels_.end())
    return *it->second;
  CUfunction function = nullptr;
  CUresult result = driver_.api().cuModuleGetFunction(&function, static_cast<CUmodule>(module_),
                                                      name.str().c_str());
  if (result == CUDA_ERROR_NOT_FOUND) {
    std::string names;
    for (const CubinKernelInfo &k : info_.kernels)
      names += (names.empty() ? "" : ", ") + k.name;
    return error("no kernel named '" + name + "' in the module (it has: " + names + ")");
  }
  if (llvm::Error e = driver_.check(result, "cuModuleGetFunction"))
    return e;
  CubinKernelInfo kinfo;
  if (const CubinKernelInfo *found = info_.find(name))
    kinfo = *found;
  kinfo.name = name.str();
  auto kernel = std::unique_ptr<Kernel>(new Kernel(this, function, std::move(kinfo)));
  Kernel &ref = *kernel;
  kernels_.emplace(name.str(), std::move(kernel));
  return ref;
}

llvm::Error Kernel::setMaxDynamicSharedMemory(int bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  CudaDriver &driver = module_->driver_;
  if (llvm::Error e = driver.check(
          driver.api().cuFuncSetAttribute(static_cast<CUfunction>(function_),
                                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))
    return error(llvm::toString(std::move(e)) + " for kernel " + info_.name + " (" +
                 std::to_string(bytes) + " bytes)");
  max_dynamic_shared_set_ = bytes;
  return llvm::Error::success();
}

llvm::Error Kernel::allowDynamicShared(unsigned bytes) {
  bool needOptIn = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    needOptIn = bytes > kDefaultDynamicSharedLimit && bytes > static_cast<unsigned>(max_dynamic_shared_set_);
  }
  return needOptIn ? setMaxDynamicSharedMemory(static_cast<int>(bytes)) : llvm::Error::success();
}

llvm::Error Kernel::allowClusterSize(unsigned ctas) {
  constexpr unsigned kPortableClusterCtas = 8;
  std::lock_guard<std::mutex> lock(mutex_);
  if (ctas <= kPortableClusterCtas || non_portable_cluster_set_)
    return llvm::Error::success();
  CudaDriver &driver = module_->driver_;
  if (llvm::Error e = driver.check(driver.api().cuFuncSetAttribute(static_cast<CUfunction>(function_),
                                                                   CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                                   "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)"))
    return error(llvm::toString(std::move(e)) + " for kernel " + info_.name);
  non_portable_cluster_set_ = true;
  return llvm::Error::success();
}

namespace {
// The launch attribute of a thread-block cluster of these dimensions.
CUlaunchAttribute clusterDimension(const Dim3 &cluster) {
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = cluster.x;
  attribute.value.clusterDim.y = cluster.y;
  attribute.value.clusterDim.z = cluster.z;
  return attribute;
}
} // namespace

llvm::Expected<int> Kernel::maxActiveClusters(const LaunchConfig &config) {
  const unsigned threads = config.block.x * config.block.y * config.block.z;
  const unsigned cluster = config.cluster.x * config.cluster.y * config.cluster.z;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const ClusterOccupancy &c = cluster_occupancy_;
    if (c.clusters >= 0 && c.threads == threads && c.cluster == cluster && c.shared == config.dynamic_shared_bytes)
      return c.clusters;
  }
  // (the occupancy of a kernel not yet allowed its shared memory or cluster size would be 0)
  if (llvm::Error e = allowDynamicShared(config.dynamic_shared_bytes))
    return e;
  if (llvm::Error e = allowClusterSize(cluster))
    return e;
  CUlaunchConfig launch{};
  launch.gridDimX = config.cluster.x, launch.gridDimY = config.cluster.y, launch.gridDimZ = config.cluster.z;
  launch.blockDimX = config.block.x, launch.blockDimY = config.block.y, launch.blockDimZ = config.block.z;
  launch.sharedMemBytes = config.dynamic_shared_bytes;
  CUlaunchAttribute attribute = clusterDimension(config.cluster);
  launch.attrs = &attribute;
  launch.numAttrs = 1;
  int clusters = 0;
  CudaDriver &driver = module_->driver_;
  if (llvm::Error e = driver.check(
          driver.api().cuOccupancyMaxActiveClusters(&clusters, static_cast<CUfunction>(function_), &launch),
          "cuOccupancyMaxActiveClusters"))
    return error(llvm::toString(std::move(e)) + fmt::format(" for kernel {0} (cluster {1}x{2}x{3})", info_.name,
                                                             config.cluster.x, config.cluster.y, config.cluster.z));
  std::lock_guard<std::mutex> lock(mutex_);
  cluster_occupancy_ = {threads, cluster, config.dynamic_shared_bytes, clusters};
  return clusters;
}

llvm::Expected<int> Kernel::maxActiveBlocksPerSm(const LaunchConfig &config) {
  const unsigned threads = config.block.x * config.block.y * config.block.z;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const BlockOccupancy &b = block_occupancy_;
    if (b.blocks >= 0 && b.threads == threads && b.shared == config.dynamic_shared_bytes)
      return b.blocks;
  }
  if (llvm::Error e = allowDynamicShared(config.dynamic_shared_bytes))
    return e;
  int blocks = 0;
  CudaDriver &driver = module_->driver_;
  if (llvm::Error e = driver.check(driver.api().cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                       &blocks, static_cast<CUfunction>(function_), static_cast<int>(threads),
                                       config.dynamic_shared_bytes),
                                   "cuOccupancyMaxActiveBlocksPerMultiprocessor"))
    return error(llvm::toString(std::move(e)) + " for kernel " + info_.name);
  std::lock_guard<std::mutex> lock(mutex_);
  block_occupancy_ = {threads, config.dynamic_shared_bytes, blocks};
  return blocks;
}

llvm::Error Kernel::launch(const LaunchConfig &config, llvm::ArrayRef<void *> args) {
  const DeviceInfo &device = module_->device_;
  const uint64_t threads = uint64_t(config.block.x) * config.block.y * config.block.z;
  if (info_.max_threads > 0 && threads > static_cast<uint64_t>(info_.max_threads))
    return error(fmt::format("kernel {0}: block of {1} threads exceeds its __launch_bounds__ ({2})",
                               info_.name, threads, info_.max_threads));
  const uint64_t shared = uint64_t(config.dynamic_shared_bytes) + info_.static_shared_bytes;
  if (device.max_shared_per_block_optin > 0 &&
      shared > static_cast<uint64_t>(device.max_shared_per_block_optin))
    return error(fmt::format("kernel {0}: {1} bytes of shared memory ({2} dynamic + {3} static) "
                               "exceed the {4} bytes a block may use on {5}",
                               info_.name, shared, config.dynamic_shared_bytes,
                               info_.static_shared_bytes, device.max_shared_per_block_optin,
                               device.name));
  if (llvm::Error e = allowDynamicShared(config.dynamic_shared_bytes))
    return e;
  if (llvm::Error e = allowClusterSize(config.cluster.x * config.cluster.y * config.cluster.z))
    return e;

  CUlaunchConfig launch{};
  launch.gridDimX = config.grid.x;
  launch.gridDimY = config.grid.y;
  launch.gridDimZ = config.grid.z;
  launch.blockDimX = config.block.x;
  launch.blockDimY = config.block.y;
  launch.blockDimZ = config.block.z;
  launch.sharedMemBytes = config.dynamic_shared_bytes;
  launch.hStream = static_cast<CUstream>(config.stream);
  CUlaunchAttribute attribute{};
  if (config.cluster.x * config.cluster.y * config.cluster.z > 1) {
    attribute = clusterDimension(config.cluster);
    launch.attrs = &attribute;
    launch.numAttrs = 1;
  }
  CudaDriver &driver = module_->driver_;
  if (llvm::Error e = driver.check(
          driver.api().cuLaunchKernelEx(&launch, static_cast<CUfunction>(function_),
                                        const_cast<void **>(args.data()), nullptr),
          "cuLaunchKernelEx"))
    return error(llvm::toString(std::move(e)) +
                 fmt::format(" for kernel {0} (grid {1}x{2}x{3}, block {4}x{5}x{6}, {7} bytes "
                               "dynamic shared, cluster {8}x{9}x{10})",
                               info_.name, config.grid.x, config.grid.y, config.grid.z,
                               config.block.x, config.block.y, config.block.z,
                               config.dynamic_shared_bytes, config.cluster.x, config.cluster.y,
                               config.cluster.z));
  return llvm::Error::success();
}

} // namespace fa4jit::runtime
