#pragma once
// SHA256 as lowercase hex: the one digest used for cache keys, manifests and header hashes.
#include "llvm/ADT/StringRef.h"

#include <string>

namespace fa4jit::cache {

std::string sha256Hex(llvm::StringRef bytes);

// True for a string of exactly 64 lowercase hex digits (a key or a file hash).
bool isSha256Hex(llvm::StringRef text);

} // namespace fa4jit::cache
