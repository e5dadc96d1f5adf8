// Engine::mergeStates: validate, fill the kernel's MergeParams (templates/fa4jit/merge/params.cuh)
// and launch one merge-states kernel on the caller's stream.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/merge/params.cuh"
#include "fa4jit/runtime/forward_validate.h"

#include "llvm/Support/FormatVariadic.h"

namespace fa4jit {

static_assert(kMaxMergeParts == device::merge::kMaxMergeParts, "engine.h and the template agree on parts");

namespace {
StateType stateTypeOf(DType t) {
  return t == DType::F32 ? StateType::F32 : t == DType::F16 ? StateType::F16 : StateType::Bf16;
}
} // namespace

llvm::Error Engine::mergeStates(const MergeArgs &a) {
  if (auto err = runtime::validateMerge(a))
    return err;
  if (runtime::isEmpty(a.o))
    return llvm::Error::success();
  const std::int64_t rows = a.o.shape[0] * a.o.shape[1] * a.o.shape[2];
  if (auto err = checkTensorMemory(a.o, "merge o"))
    return err;
  if (a.lse)
    if (auto err = checkDeviceMemory(a.lse, std::uint64_t(rows) * 4, "merge lse"))
      return err;
  device::merge::MergeParams p{};
  for (std::size_t i = 0; i < a.parts.size(); ++i) {
    const AttentionState &part = a.parts[i];
    if (auto err = checkTensorMemory(part.o, "merge part o"))
      return err;
    if (auto err = checkDeviceMemory(part.lse, std::uint64_t(rows) * 4, "merge part lse"))
      return err;
    p.parts[i] = {part.o.data, part.lse, part.o.stride[0], part.o.stride[1], part.o.stride[2]};
  }
  p.o = a.o.data, p.lse = a.lse;
  p.o_batch_stride = a.o.stride[0], p.o_head_stride = a.o.stride[1], p.o_row_stride = a.o.stride[2];
  p.num_parts = static_cast<int>(a.parts.size());
  p.batch = static_cast<int>(a.o.shape[0]), p.heads = static_cast<int>(a.o.shape[1]);
  p.seqlen = static_cast<int>(a.o.shape[2]);

  const KernelSpec spec = defaultMergeSpec(stateTypeOf(a.o.dtype), static_cast<int>(a.o.shape[3]), target_);
  auto compiled = jit_->get(spec);
  if (!compiled)
    return compiled.takeError();
  const EntryPoint &entry = (*compiled)->emitted.entries.at(0);
  auto merge = kernel(spec, entry.name);
  if (!merge)
    return merge.takeError();
  const int rows_per_cta = device::merge::mergeRowsPerCta(entry.threads, spec.merge.head_dim);
  const std::int64_t blocks = (rows + rows_per_cta - 1) / rows_per_cta;
  if (blocks > 0x7FFFFFFF)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::formatv("merge: {0} rows exceed one launch's grid", rows).str());
  runtime::LaunchConfig launch;
  launch.block = {unsigned(entry.threads), 1, 1};
  launch.grid = {unsigned(blocks), 1, 1};
  launch.stream = a.stream;
  void *args[] = {&p};
  return merge->launch(launch, args);
}

} // namespace fa4jit
