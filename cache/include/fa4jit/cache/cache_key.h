#pragma once
// Content address of a compiled kernel. Everything that can change the compiled bytes enters the
// key as a named part: the generated source, a hash of every embedded header it may include, the
// NVRTC version and build, the target, the normalized options and the cache schema version.
// Stale keys (Triton #11817) come from a missing part, so parts are named and listed in the
// manifest, where `fa4jit cache ls` shows them.
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fa4jit::cache {

// A finished key: the digest addresses the entry; parts (short values verbatim, long ones as
// their SHA256) are written into the manifest for people to read.
struct CacheKey {
  std::string digest; // 64 lowercase hex digits
  std::vector<std::pair<std::string, std::string>> parts;
};

class CacheKeyBuilder {
public:
  CacheKeyBuilder &source(llvm::StringRef generatedSource);
  // Pass the header's bytes; its SHA256 enters the key under "header:<name>".
  CacheKeyBuilder &header(llvm::StringRef name, llvm::StringRef contents);
  CacheKeyBuilder &nvrtcVersion(int major, int minor, llvm::StringRef build);
  CacheKeyBuilder &target(llvm::StringRef target);
  CacheKeyBuilder &options(llvm::ArrayRef<std::string> compilerOptions);
  // Any other input that changes the compiled bytes (e.g. a codegen environment variable).
  CacheKeyBuilder &part(llvm::StringRef name, llvm::StringRef value);

  // The schema version is added here, so no caller can forget it.
  CacheKey build() const;

private:
  std::map<std::string, std::string> parts_;
};

// Options as the key sees them: tokens trimmed, empty ones dropped, a value token ("-arch",
// "sm_100a") bound to its option, then stably sorted by option name, so that only a reordering
// that cannot change the result (different names) maps to the same key; repeats of one name
// keep their order because the last one wins (-DX=1 -DX=2).
std::vector<std::string> normalizeOptions(llvm::ArrayRef<std::string> compilerOptions);

} // namespace fa4jit::cache
