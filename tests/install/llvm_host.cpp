// A host process that has its own LLVM loaded globally (as PyTorch with Triton has) loads
// libfa4jit.so beside it: the library must load (no option registered twice, no symbol bound to
// the host's copy) and work: its version, and an engine that opens on a GPU or fails with a
// message on a machine without one. Usage: install_llvm_host LIBFA4JIT
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace {
int fail(const char *what, const char *detail) {
  std::fprintf(stderr, "install_llvm_host: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    return fail("usage: install_llvm_host LIBFA4JIT", nullptr);
  const char *hosts[] = {"libLLVM-15.so.1", "libLLVM-14.so.1", "libLLVM.so"};
  void *host = nullptr;
  const char *loaded = nullptr;
  for (const char *name : hosts)
    if ((host = dlopen(name, RTLD_NOW | RTLD_GLOBAL)) != nullptr) {
      loaded = name;
      break;
    }
  if (!host)
    return fail("no shared LLVM to load as the host's", dlerror());
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return fail("libfa4jit.so does not load beside the host's LLVM", dlerror());
  using VersionFn = const char *(*)();
  using CreateFn = int (*)(int, void **);
  using DestroyFn = void (*)(void *);
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "fa4jit_version"));
  auto create = reinterpret_cast<CreateFn>(dlsym(lib, "fa4jit_engine_create"));
  auto destroy = reinterpret_cast<DestroyFn>(dlsym(lib, "fa4jit_engine_destroy"));
  auto last_error = reinterpret_cast<VersionFn>(dlsym(lib, "fa4jit_last_error"));
  // The library's LLVM stays its own: none of its LLVM symbols is visible from outside.
  if (dlsym(lib, "_ZN4llvm3sys7Process6GetEnvB5cxx11ENS_9StringRefE") != nullptr)
    return fail("libfa4jit.so exposes LLVM symbols", nullptr);
  if (!version || !create || !destroy || !last_error)
    return fail("a C API function is missing", nullptr);
  std::printf("host LLVM %s; fa4jit %s\n", loaded, version());
  void *engine = nullptr;
  if (create(0, &engine) == 0) {
    std::printf("engine on device 0\n");
    destroy(engine);
  } else {
    const char *why = last_error();
    if (engine != nullptr || why == nullptr || std::strlen(why) == 0)
      return fail("a failed engine creation left no message", nullptr);
    std::printf("no engine: %s\n", why);
  }
  return 0;
}
