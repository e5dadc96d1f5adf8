#include "fa4jit/runtime/driver_library.h"

#include "driver_api.h"
#include "dynamic_library.h"

#include <fmt/format.h>

namespace fa4jit::runtime {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

CudaDriver::CudaDriver() = default;

CudaDriver::~CudaDriver() {
  if (!api_)
    return;
  for (size_t ordinal = 0; ordinal < retained_contexts_.size(); ++ordinal) {
    CUdevice device = 0;
    if (retained_contexts_[ordinal] && api_->cuDeviceGet(&device, static_cast<int>(ordinal)) == CUDA_SUCCESS)
      api_->cuDevicePrimaryCtxRelease(device);
  }
}

const std::string &CudaDriver::path() const { return lib_->path(); }

std::string CudaDriver::driverVersionString() const {
  return std::to_string(driver_version_ / 1000) + "." + std::to_string(driver_version_ % 1000 / 10);
}

llvm::Error checkDriverResult(const DriverApi &api, int cu_result, const char *call) {
  if (cu_result == CUDA_SUCCESS)
    return llvm::Error::success();
  const char *name = nullptr, *text = nullptr;
  auto result = static_cast<CUresult>(cu_result);
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (api.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  return error(fmt::format("{0} failed: {1} ({2})", call,
                             name ? name : ("CUresult " + std::to_string(cu_result)).c_str(),
                             text ? text : "no description"));
}

llvm::Error CudaDriver::check(int cu_result, const char *call) const {
  return checkDriverResult(*api_, cu_result, call);
}

llvm::Expected<std::unique_ptr<CudaDriver>> CudaDriver::load(const DriverSearch &search) {
  auto lib = detail::DynamicLibrary::openFirst(
      search.candidates, "no CUDA driver: libcuda could not be loaded, so kernels cannot run on "
                         "this machine (is the NVIDIA driver installed? CPU paths and NVRTC "
                         "compilation still work)");
  if (!lib)
    return lib.takeError();
  std::unique_ptr<CudaDriver> self(new CudaDriver());
  self->lib_ = std::move(*lib);
  auto getProc = reinterpret_cast<decltype(&::cuGetProcAddress)>(
      self->lib_->symbol("cuGetProcAddress_v2"));
  if (!getProc)
    return error("CUDA driver at " + self->lib_->path() +
                 " is too old: it lacks cuGetProcAddress_v2 (fa4jit needs a CUDA 12.0+ driver)");
  self->api_ = std::make_unique<DriverApi>();
  DriverApi &api = *self->api_;
  std::string missing;
#define FA4JIT_DRIVER_BIND(name)                                                                   \
  {                                                                                                \
    void *fn = nullptr;                                                                            \
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                  \
    if (getProc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS && \
        status == CU_GET_PROC_ADDRESS_SUCCESS && fn)                                               \
      api.name = reinterpret_cast<decltype(api.name)>(fn);                                         \
    else                                                                                           \
      missing += " " #name;                                                                        \
  }
  FA4JIT_DRIVER_FUNCTIONS(FA4JIT_DRIVER_BIND)
#undef FA4JIT_DRIVER_BIND
  if (!missing.empty())
    return error("CUDA driver at " + self->lib_->path() + " lacks" + missing +
                 " (driver older than the CUDA " + std::to_string(CUDA_VERSION / 1000) +
                 " headers fa4jit was built with?)");
  if (api.cuDriverGetVersion(&self->driver_version_) != CUDA_SUCCESS)
    self->driver_version_ = 0;
  CUresult init = api.cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE)
    return error("no CUDA device: the driver (" + self->driverVersionString() +
                 ") is installed but reports no CUDA-capable device");
  if (llvm::Error e = self->check(init, "cuInit"))
    return error("CUDA driver initialization failed: " + llvm::toString(std::move(e)));
  if (llvm::Error e = self->check(api.cuDeviceGetCount(&self->device_count_), "cuDeviceGetCount"))
    return e;
  if (self->device_count_ == 0)
    return error("no CUDA device: the driver reports 0 devices");
  self->retained_contexts_.assign(static_cast<size_t>(self->device_count_), nullptr);
  return self;
}

llvm::Expected<CudaDriver &> CudaDriver::get() {
  // Never unloaded: kernels, buffers and contexts may outlive any static destructor order.
  static std::once_flag once;
  static CudaDriver *instance = nullptr;
  static std::string *failure = nullptr;
  std::call_once(once, [] {
    auto loaded = load(DriverSearch{});
    if (loaded)
      instance = loaded->release();
    else
      failure = new std::string(llvm::toString(loaded.takeError()));
  });
  if (!instance)
    return error(*failure);
  return *instance;
}

llvm::Expected<DeviceInfo> CudaDriver::device(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count_)
    return error(fmt::format("no CUDA device with ordinal {0} (the driver reports {1})", ordinal,
                               device_count_));
  const DriverApi &api = *api_;
  CUdevice dev = 0;
  if (llvm::Error e = check(api.cuDeviceGet(&dev, ordinal), "cuDeviceGet"))
    return e;
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  if (llvm::Error e = check(api.cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName"))
    return e;
  info.name = name;
  struct {
    CUdevice_attribute attribute;
    int *out;
  } const attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.cc_major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.cc_minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.sm_count},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.max_shared_per_block_optin},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &info.max_shared_per_sm},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &info.l2_bytes},
  };
  for (const auto &a : attributes)
    if (llvm::Error e = check(api.cuDeviceGetAttribute(a.out, a.attribute, dev), "cuDeviceGetAttribute"))
      return e;
  size_t bytes = 0;
  if (llvm::Error e = check(api.cuDeviceTotalMem(&bytes, dev), "cuDeviceTotalMem"))
    return e;
  info.total_memory_bytes = bytes;
  return info;
}

llvm::Error CudaDriver::makeCurrent(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count_)
    return error(fmt::format("no CUDA device with ordinal {0} (the driver reports {1})", ordinal,
                               device_count_));
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  void *&slot = retained_contexts_[static_cast<size_t>(ordinal)];
  if (!slot) {
    CUdevice dev = 0;
    if (llvm::Error e = check(api_->cuDeviceGet(&dev, ordinal), "cuDeviceGet"))
      return e;
    CUcontext ctx = nullptr;
    if (llvm::Error e = check(api_->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain"))
      return e;
    slot = ctx;
  }
  return check(api_->cuCtxSetCurrent(static_cast<CUcontext>(slot)), "cuCtxSetCurrent");
}

} // namespace fa4jit::runtime
