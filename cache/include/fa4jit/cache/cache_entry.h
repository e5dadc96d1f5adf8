#pragma once
// What a cache entry holds: named files (kernel.cubin, kernel.cu, spec.json, ...).
#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <string>

namespace fa4jit::cache {

// File name -> bytes. Names are [A-Za-z0-9._-], not starting with '.', and not one of the names
// the cache itself uses (manifest.json, last_use).
using EntryFiles = std::map<std::string, std::string>;

// Where an entry was found.
enum class Layer { Memory, System, User, Produced };
const char *layerName(Layer layer);

struct CacheEntry {
  std::string key;
  EntryFiles files;
  Layer layer = Layer::Produced; // layer the entry first came from in this process

  // nullptr when the entry has no such file.
  const std::string *file(llvm::StringRef name) const;
  uint64_t bytes() const;
};
using EntryPtr = std::shared_ptr<const CacheEntry>;

// Empty when `name` may be used as an entry file name, else why not.
std::string checkEntryFileName(llvm::StringRef name);

} // namespace fa4jit::cache
