#pragma once
// Private: a dlopen'ed shared library. fa4jit never links libcuda or NVRTC, so the library and
// its CLI load (and run their CPU paths) on machines without a GPU, a driver or a toolkit.
#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <memory>
#include <string>

namespace fa4jit::runtime::detail {

class DynamicLibrary {
public:
  // Opens the first candidate that loads. A candidate may be a bare soname (searched by the
  // dynamic linker) or an absolute path with a trailing '*' (glob, newest name first). The error
  // lists every attempt with dlerror's reason.
  static llvm::Expected<std::unique_ptr<DynamicLibrary>>
  openFirst(llvm::ArrayRef<std::string> candidates, const std::string &what);

  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;

  void *symbol(const char *name) const;
  const std::string &path() const { return path_; }       // resolved file actually loaded
  const std::string &buildId() const { return build_id_; } // GNU build-id in hex, or ""

private:
  DynamicLibrary() = default;
  void *handle_ = nullptr;
  std::string path_;
  std::string build_id_;
};

} // namespace fa4jit::runtime::detail
