#pragma once
// The decode shape flags `fa4jit bench --decode` and `fa4jit tune --decode` share: lists of batch
// sizes, context lengths, page sizes and V formats, and the heads, head dim and queries per
// sequence, parsed and checked in one place.
#include "cli_flags.h"

#include "fa4jit/codegen/spec.h"

#include <vector>

namespace fa4jit::tools {

struct DecodeGridFlags {
  std::vector<int> batches, contexts, page_sizes;
  std::vector<KvValueFormat> value_formats;
  int q_heads = 32, kv_heads = 8, head_dim = 128, queries = 1;
};

// The flag definitions: --batch --context --page-size --value-format --q-heads --kv-heads
// --queries (--head-dim is the shared one).
std::vector<FlagDef> decodeGridFlagDefs();

// Each list's default when the flag is absent.
struct DecodeGridDefaults {
  const char *batches, *contexts, *page_sizes, *value_formats;
};
llvm::Expected<DecodeGridFlags> readDecodeGridFlags(const CliFlags &flags, const DecodeGridDefaults &defaults);

} // namespace fa4jit::tools
