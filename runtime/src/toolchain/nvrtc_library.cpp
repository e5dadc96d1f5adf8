#include "fa4jit/runtime/nvrtc_library.h"

#include "dynamic_library.h"
#include "nvrtc_api.h"

#include <algorithm>
#include <mutex>

namespace fa4jit::runtime {

std::vector<std::string> NvrtcSearch::defaultCandidates() {
  return {"libnvrtc.so.13", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so*"};
}

NvrtcLibrary::NvrtcLibrary() = default;
NvrtcLibrary::~NvrtcLibrary() = default;

const std::string &NvrtcLibrary::path() const { return lib_->path(); }
const std::string &NvrtcLibrary::buildId() const { return lib_->buildId(); }

std::string NvrtcLibrary::identity() const {
  return "nvrtc " + std::to_string(major_) + "." + std::to_string(minor_) + " build " +
         (buildId().empty() ? "unknown" : buildId());
}

bool NvrtcLibrary::supportsSm(int sm_number) const {
  return std::find(archs_.begin(), archs_.end(), sm_number) != archs_.end();
}

llvm::Expected<std::unique_ptr<NvrtcLibrary>> NvrtcLibrary::load(const NvrtcSearch &search) {
  auto lib = detail::DynamicLibrary::openFirst(
      search.candidates, "NVRTC (the CUDA runtime compiler) is not available, so kernels cannot be "
                         "compiled here (CPU paths and cached kernels still work)");
  if (!lib)
    return lib.takeError();
  std::unique_ptr<NvrtcLibrary> self(new NvrtcLibrary());
  self->lib_ = std::move(*lib);
  self->api_ = std::make_unique<NvrtcApi>();
  NvrtcApi &api = *self->api_;
  std::string missing;
#define FA4JIT_NVRTC_BIND(name)                                                                    \
  api.name = reinterpret_cast<decltype(api.name)>(self->lib_->symbol(#name));                     \
  if (!api.name)                                                                                   \
    missing += " " #name;
  FA4JIT_NVRTC_FUNCTIONS(FA4JIT_NVRTC_BIND)
#undef FA4JIT_NVRTC_BIND
  if (!missing.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "NVRTC at %s lacks required functions:%s (too old?)",
                                   self->lib_->path().c_str(), missing.c_str());
  api.nvrtcGetPCHCreateStatus = reinterpret_cast<decltype(api.nvrtcGetPCHCreateStatus)>(
      self->lib_->symbol("nvrtcGetPCHCreateStatus"));
  if (api.nvrtcVersion(&self->major_, &self->minor_) != NVRTC_SUCCESS)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "nvrtcVersion failed for %s",
                                   self->lib_->path().c_str());
  int count = 0;
  if (api.nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    self->archs_.resize(static_cast<size_t>(count));
    if (api.nvrtcGetSupportedArchs(self->archs_.data()) != NVRTC_SUCCESS)
      self->archs_.clear();
  }
  return self;
}

llvm::Expected<const NvrtcLibrary &> NvrtcLibrary::get() {
  // Opened once and never closed: NVRTC keeps process-wide state (PCH heap, builtins) and
  // unloading it during static destruction races with compile threads still finishing.
  static std::once_flag once;
  static NvrtcLibrary *instance = nullptr;
  static std::string *failure = nullptr;
  std::call_once(once, [] {
    auto loaded = load(NvrtcSearch{});
    if (loaded)
      instance = loaded->release();
    else
      failure = new std::string(llvm::toString(loaded.takeError()));
  });
  if (!instance)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), *failure);
  return *instance;
}

} // namespace fa4jit::runtime
