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
  auto add = [&](int warps, int splits) -> llvm::Error {
    for (const DecodeCandidate &c : list.kept)
      if (c.spec.paged.warps == warps && c.splits == splits)
        return llvm::Error::success();
    KernelSpec spec = defaultPagedKvSpec(shape.head_dim, shape.page_size, warps, shape.target, shape.value_format);
    if (llvm::Error e = validateSpec(spec))
      return e;
    list.kept.push_back({spec, splits, fmt::format("w{} s{}", warps, splits)});
    return llvm::Error::success();
  };
  const DecodeGridChoice heuristic = chooseDecodeGrid(shape.base_ctas, shape.max_seq_len, shape.sm_count);
  if (llvm::Error e = add(heuristic.warps, heuristic.splits))
    return e;
  const int most_splits =
      std::max(1, std::min(device::paged::kMaxDecodeSplits, (shape.max_seq_len + kMinKeysPerSplit - 1) / kMinKeysPerSplit));
  for (int warps : {4, 8})
    for (int splits = 1; splits <= most_splits; splits *= 2)
      if (llvm::Error e = add(warps, splits))
        return e;
  return list;
}

} // namespace fa4jit
