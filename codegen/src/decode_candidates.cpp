// The autotuner's decode plans for one shape (decode_candidates.h).
#include "fa4jit/codegen/decode_candidates.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/paged/params.cuh"

#include <fmt/format.h>

namespace fa4jit {

int decodeCtaBucket(long long base_ctas) {
  long long b = 1;
  while (b < base_ctas && b < (1LL << 30))
    b <<= 1;
  return static_cast<int>(b);
}

llvm::Expected<DecodeCandidateList> enumerateDecodeCandidates(const DecodeShape &shape) {
  DecodeCandidateList list;
  auto add = [&](int warps, int kv_stages, int splits) -> llvm::Error {
    for (const DecodeCandidate &c : list.kept)
      if (c.spec.paged.warps == warps && c.spec.paged.kv_stages == kv_stages && c.splits == splits)
        return llvm::Error::success();
    KernelSpec spec = defaultPagedKvSpec(shape.head_dim, shape.page_size, warps, shape.target, shape.value_format);
    spec.paged.kv_stages = kv_stages;
    if (llvm::Error e = validateSpec(spec))
      return e;
    list.kept.push_back({spec, splits,
                         kv_stages ? fmt::format("w{} s{} ring{}", warps, splits, kv_stages)
                                   : fmt::format("w{} s{}", warps, splits)});
    return llvm::Error::success();
  };
  const DecodeGridChoice heuristic = chooseDecodeGrid(shape.base_ctas, shape.max_seq_len, shape.sm_count);
  const KernelSpec heuristic_spec =
      defaultPagedKvSpec(shape.head_dim, shape.page_size, heuristic.warps, shape.target, shape.value_format);
  if (llvm::Error e = add(heuristic.warps, heuristic_spec.paged.kv_stages, heuristic.splits))
    return e;
  const int most_splits =
      std::max(1, std::min(device::paged::kMaxDecodeSplits, (shape.max_seq_len + kMinKeysPerSplit - 1) / kMinKeysPerSplit));
  for (int kv_stages : {0, 3})
    for (int warps : {4, 8})
      for (int splits = 1; splits <= most_splits; splits *= 2)
        if (llvm::Error e = add(warps, kv_stages, splits))
          return e;
  return list;
}

} // namespace fa4jit
