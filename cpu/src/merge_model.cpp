// mergeStatesModel (merge.h): the kernel's row rule from its own header, then the kernel's
// fused multiply-adds in part order.
#include "fa4jit/cpu/merge.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fa4jit/merge/params.cuh"

namespace fa4jit::cpu {

llvm::Error mergeStatesModel(llvm::ArrayRef<StateRef> parts, std::int64_t rows, int head_dim, float *o, float *lse) {
  namespace dm = device::merge;
  if (parts.empty() || parts.size() > static_cast<std::size_t>(dm::kMaxMergeParts))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "merge model: %zu parts (1 to %d)", parts.size(),
                                   dm::kMaxMergeParts);
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (!parts[i].o || !parts[i].lse)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "merge model: part %zu has no o or lse", i);
  if (!o)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "merge model: no output o");
  const int n = static_cast<int>(parts.size());
  std::vector<float> acc(head_dim);
  for (std::int64_t r = 0; r < rows; ++r) {
    float row_lse[dm::kMaxMergeParts] = {}, scale[dm::kMaxMergeParts];
    for (int i = 0; i < n; ++i)
      row_lse[i] = parts[i].lse[r];
    const float merged = dm::mergeRowScales(row_lse, n, scale);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int i = 0; i < n; ++i)
      if (scale[i] != 0.0f)
        for (int d = 0; d < head_dim; ++d)
          acc[d] = std::fma(scale[i], parts[i].o[r * head_dim + d], acc[d]);
    std::copy(acc.begin(), acc.end(), o + r * head_dim);
    if (lse)
      lse[r] = merged;
  }
  return llvm::Error::success();
}

} // namespace fa4jit::cpu
