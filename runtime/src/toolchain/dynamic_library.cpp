#include "dynamic_library.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <glob.h>
#include <link.h>
#include <llvm/ADT/StringRef.h>
#include <vector>

namespace fa4jit::runtime::detail {
namespace {

std::vector<std::string> expand(const std::string &candidate) {
  if (candidate.find('*') == std::string::npos)
    return {candidate};
  std::vector<std::string> out;
  glob_t g{};
  if (glob(candidate.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  // Longest (most specific version) first: libfoo.so.13.0 before libfoo.so.13 before libfoo.so.
  std::stable_sort(out.begin(), out.end(),
                   [](const std::string &a, const std::string &b) { return a.size() > b.size(); });
  return out;
}

struct BuildIdSearch {
  ElfW(Addr) base;
  std::string hex;
};

// The build-id identifies the exact library build without reading the (100 MB) file: it is in a
// PT_NOTE segment that the dynamic linker already mapped.
int findBuildId(struct dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  if (info->dlpi_addr != search->base)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const auto *p = reinterpret_cast<const unsigned char *>(info->dlpi_addr + ph.p_vaddr);
    const auto *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const unsigned char *name = p + sizeof note;
      const unsigned char *desc = name + ((note.n_namesz + 3) & ~3u);
      if (desc + note.n_descsz > end)
        break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char digits[] = "0123456789abcdef";
        for (unsigned j = 0; j < note.n_descsz; ++j) {
          search->hex.push_back(digits[desc[j] >> 4]);
          search->hex.push_back(digits[desc[j] & 15]);
        }
        return 1;
      }
      p = desc + ((note.n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

} // namespace

llvm::Expected<std::unique_ptr<DynamicLibrary>>
DynamicLibrary::openFirst(llvm::ArrayRef<std::string> candidates, const std::string &what) {
  std::string attempts;
  for (const std::string &candidate : candidates) {
    std::vector<std::string> names = expand(candidate);
    if (names.empty())
      attempts += "\n  " + candidate + ": no such file";
    for (const std::string &name : names) {
      dlerror();
      void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char *reason = dlerror();
        attempts += "\n  " + name + ": " + (reason ? reason : "dlopen failed");
        continue;
      }
      std::unique_ptr<DynamicLibrary> lib(new DynamicLibrary());
      lib->handle_ = handle;
      lib->path_ = name;
      struct link_map *map = nullptr;
      if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map) {
        if (map->l_name && *map->l_name) {
          char resolved[4096];
          lib->path_ = realpath(map->l_name, resolved) ? resolved : map->l_name;
        }
        BuildIdSearch search{map->l_addr, {}};
        dl_iterate_phdr(findBuildId, &search);
        lib->build_id_ = search.hex;
      }
      return lib;
    }
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: tried%s", what.c_str(),
                                 attempts.c_str());
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_)
    dlclose(handle_);
}

void *DynamicLibrary::symbol(const char *name) const { return dlsym(handle_, name); }

} // namespace fa4jit::runtime::detail
