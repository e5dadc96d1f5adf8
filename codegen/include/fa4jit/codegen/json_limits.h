#pragma once
// JSON read from files fa4jit does not control (cache manifests, tuning databases, spec files)
// is parsed only after a bounds check: llvm::json::parse recurses once per nesting level, so a
// file of 100,000 '[' would overflow the stack. Deeper or larger text is an error, which the
// readers treat as a corrupt file.
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace fa4jit {

// Far above what any fa4jit file nests (a spec: 4 levels; a tuning database: 6).
inline constexpr unsigned kMaxJsonDepth = 64;
// Far above any fa4jit file (a tuning database of thousands of records is a few MB).
inline constexpr std::size_t kMaxJsonBytes = std::size_t(256) << 20;

// llvm::json::parse, after checking `text` against kMaxJsonDepth and kMaxJsonBytes (brackets
// inside strings do not count). `what` names the text in the error.
llvm::Expected<llvm::json::Value> parseJsonBounded(llvm::StringRef text, llvm::StringRef what);

} // namespace fa4jit
