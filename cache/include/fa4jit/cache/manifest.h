#pragma once
// manifest.json of a cache entry: what the entry should contain, checked on every load.
// The manifest also carries a SHA256 of its own bytes (with that field zeroed), so a flipped
// byte anywhere in it, even in a field that load does not otherwise check, is caught.
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fa4jit::cache {

struct ManifestFile {
  std::string name;
  uint64_t size = 0;
  std::string sha256;
};

struct Manifest {
  int schema = 0;
  std::string key;
  std::string writer_version; // fa4jit version that wrote the entry
  int64_t created_unix_seconds = 0;
  std::vector<ManifestFile> files;
  std::vector<std::pair<std::string, std::string>> key_parts; // CacheKey::parts, for people
};

std::string serializeManifest(const Manifest &manifest);
// Fails (naming what is wrong) on a self-hash mismatch, bad JSON or a missing field. The schema
// and key are returned, not judged: the caller knows what it expects.
llvm::Expected<Manifest> parseManifest(llvm::StringRef text);

} // namespace fa4jit::cache
