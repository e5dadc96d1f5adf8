// The decode shape flags (decode_flags.h).
#include "decode_flags.h"

#include "fa4jit/codegen/spec_io.h"

#include <tuple>

namespace fa4jit::tools {

namespace {
llvm::Error bad(const std::string &m) { return llvm::createStringError(llvm::inconvertibleErrorCode(), m); }
} // namespace

std::vector<FlagDef> decodeGridFlagDefs() {
  return {{"batch"}, {"context"}, {"page-size"}, {"value-format"}, {"q-heads"}, {"kv-heads"}, {"queries"}};
}

llvm::Expected<DecodeGridFlags> readDecodeGridFlags(const CliFlags &flags, const DecodeGridDefaults &d) {
  DecodeGridFlags g;
  for (auto [name, fallback, out, lo, hi] :
       {std::tuple{"batch", d.batches, &g.batches, 1L, 65535L},
        std::tuple{"context", d.contexts, &g.contexts, 1L, 1L << 24},
        std::tuple{"page-size", d.page_sizes, &g.page_sizes, 16L, 256L}}) {
    auto values = flags.integers(name, fallback, lo, hi);
    if (!values)
      return values.takeError();
    for (long v : *values)
      out->push_back(int(v));
  }
  for (auto [name, fallback, out] : {std::tuple{"q-heads", 32L, &g.q_heads}, std::tuple{"kv-heads", 8L, &g.kv_heads},
                                     std::tuple{"head-dim", 128L, &g.head_dim}, std::tuple{"queries", 1L, &g.queries}}) {
    auto v = flags.integer(name, fallback, 1, 1 << 16);
    if (!v)
      return v.takeError();
    *out = int(*v);
  }
  if (g.q_heads % g.kv_heads)
    return bad("--q-heads " + std::to_string(g.q_heads) + " is not a multiple of --kv-heads " +
               std::to_string(g.kv_heads));
  auto formats = flags.list("value-format", d.value_formats);
  if (!formats)
    return formats.takeError();
  for (const std::string &name : *formats) {
    auto value = parseKvValueFormat(name);
    if (!value)
      return value.takeError();
    g.value_formats.push_back(*value);
  }
  return g;
}

} // namespace fa4jit::tools
