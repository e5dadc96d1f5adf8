#pragma once
// Where things live in a cache root:
//   <root>/<key[0:2]>/<key>/        an entry: its files, manifest.json, last_use
//   <root>/tmp/<key>.<pid>.XXXXXX   a publish (or removal) in progress; renamed in or deleted
//   <root>/locks/<key>.lock         the per-key lock file (flock; removed with a pruned entry)
// The temporary directories sit in the same root so that the final rename stays on one file
// system and is atomic.
#include "llvm/ADT/StringRef.h"

#include <string>

namespace fa4jit::cache {

inline constexpr const char *kManifestName = "manifest.json";
inline constexpr const char *kLastUseName = "last_use";
inline constexpr const char *kTmpDirName = "tmp";
inline constexpr const char *kLocksDirName = "locks";

inline std::string shardDir(llvm::StringRef root, llvm::StringRef key) {
  return root.str() + "/" + key.take_front(2).str();
}
inline std::string entryDir(llvm::StringRef root, llvm::StringRef key) {
  return root.str() + "/" + key.take_front(2).str() + "/" + key.str();
}
inline std::string tmpDir(llvm::StringRef root) { return root.str() + "/" + kTmpDirName; }
inline std::string locksDir(llvm::StringRef root) { return root.str() + "/" + kLocksDirName; }
inline std::string lockPath(llvm::StringRef root, llvm::StringRef key) {
  return root.str() + "/" + kLocksDirName + "/" + key.str() + ".lock";
}

} // namespace fa4jit::cache
