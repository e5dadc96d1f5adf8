#pragma once
// NVRTC, opened lazily with dlopen (no link-time dependency): fa4jit loads and runs its CPU paths
// on machines without the CUDA toolkit, and only a compile needs NVRTC.
#include <llvm/Support/Error.h>

#include <memory>
#include <string>
#include <vector>

namespace fa4jit::runtime {

namespace detail {
class DynamicLibrary;
}
struct NvrtcApi; // function table; defined in runtime/src/toolchain/nvrtc_api.h (uses nvrtc.h types)

// Where to look, in order. Defaults: libnvrtc.so.13, libnvrtc.so (dynamic linker search), then
// /usr/local/cuda/lib64/libnvrtc.so*. The lead's config (config.h) may prepend an explicit path.
struct NvrtcSearch {
  std::vector<std::string> candidates = defaultCandidates();
  static std::vector<std::string> defaultCandidates();
};

class NvrtcLibrary {
public:
  // The process-wide instance, opened with the default search on first use (thread-safe). A
  // failure is remembered and returned again; its message says NVRTC is absent and where it
  // looked.
  static llvm::Expected<const NvrtcLibrary &> get();
  // A separate instance (tests, explicit paths).
  static llvm::Expected<std::unique_ptr<NvrtcLibrary>> load(const NvrtcSearch &search);

  ~NvrtcLibrary();

  int major() const { return major_; }
  int minor() const { return minor_; }
  const std::string &path() const;    // file actually loaded
  const std::string &buildId() const; // GNU build-id of that file ("" if none)
  // "nvrtc 13.0 build 65be0db3..." : enters every cache key (a different NVRTC build may emit
  // different code for the same source and options).
  std::string identity() const;
  // SM numbers NVRTC can target (e.g. 75 ... 121).
  const std::vector<int> &supportedArchs() const { return archs_; }
  bool supportsSm(int sm_number) const;

  const NvrtcApi &api() const { return *api_; }

private:
  NvrtcLibrary();
  std::unique_ptr<detail::DynamicLibrary> lib_;
  std::unique_ptr<NvrtcApi> api_;
  int major_ = 0, minor_ = 0;
  std::vector<int> archs_;
};

} // namespace fa4jit::runtime
