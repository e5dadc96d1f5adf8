#pragma once
// JSON forms of the cache reports, for `fa4jit cache ... --json` and anything else that logs
// them. Field names are snake_case and stable.
#include "fa4jit/cache/cache_reports.h"

#include "llvm/Support/JSON.h"

#include <vector>

namespace fa4jit::cache {

llvm::json::Value toJSON(const EntryInfo &info);
llvm::json::Value toJSON(const std::vector<EntryInfo> &entries);
llvm::json::Value toJSON(const LayerStats &stats);
llvm::json::Value toJSON(const CacheStats &stats);
llvm::json::Value toJSON(const VerifyReport &report);
llvm::json::Value toJSON(const PruneReport &report);

} // namespace fa4jit::cache
