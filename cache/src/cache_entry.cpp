#include "fa4jit/cache/cache_entry.h"

#include "layout.h"

namespace fa4jit::cache {

const char *layerName(Layer layer) {
  switch (layer) {
  case Layer::Memory:
    return "memory";
  case Layer::System:
    return "system";
  case Layer::User:
    return "user";
  case Layer::Produced:
    return "produced";
  }
  return "?";
}

const std::string *CacheEntry::file(llvm::StringRef name) const {
  auto it = files.find(name.str());
  return it == files.end() ? nullptr : &it->second;
}

uint64_t CacheEntry::bytes() const {
  uint64_t total = 0;
  for (const auto &[name, data] : files)
    total += data.size();
  return total;
}

std::string checkEntryFileName(llvm::StringRef name) {
  if (name.empty() || name.size() > 128)
    return "entry file name '" + name.str() + "' must have 1 to 128 characters";
  if (name.front() == '.')
    return "entry file name '" + name.str() + "' must not start with '.'";
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return "entry file name '" + name.str() + "' may only use [A-Za-z0-9._-]";
  if (name == kManifestName || name == kLastUseName)
    return "entry file name '" + name.str() + "' is reserved by the cache";
  return "";
}

} // namespace fa4jit::cache
