// Engine::appendKv and Engine::decode: the paged KV cache's kernels (templates/fa4jit/paged),
// validated, planned and launched on the caller's stream.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/paged/params.cuh"
#include "fa4jit/runtime/decode_tuner.h"
#include "fa4jit/runtime/forward_validate.h"
#include "toolchain/driver_api.h"
#include "workspace_buffers.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <vector>
#include <cmath>

namespace fa4jit {

namespace dp = device::paged;

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// The arrays' bytes, in PagedKvCache's order (0 for the V arrays the format does not have), each
// rounded up to 256 bytes in one allocation.
struct CacheArrays {
  std::size_t bytes[6];
  std::size_t offsets[6];
  std::size_t total;
};
CacheArrays cacheArrays(int pages, int kv_heads, int page_size, int head_dim, KvValueFormat value) {
  const std::size_t rows = static_cast<std::size_t>(pages) * kv_heads * page_size;
  const bool mx = value == KvValueFormat::Mxfp4;
  CacheArrays a{{rows * head_dim / 2, rows * head_dim / 16, rows * 4, mx ? rows * head_dim / 2 : rows * head_dim,
                 mx ? 0 : rows * 4, mx ? rows * head_dim / 32 : 0},
                {},
                0};
  for (int i = 0; i < 6; ++i) {
    a.offsets[i] = a.total;
    a.total += (a.bytes[i] + 255) / 256 * 256;
  }
  return a;
}

dp::PagedCacheView viewOf(const PagedKvCache &c) {
  return {c.k_codes, c.k_block_scales, c.k_row_scales, c.v_codes,   c.v_row_scales,
          c.v_block_scales, c.pages,   c.kv_heads,       c.page_size, c.head_dim};
}

// The cache's arrays with their byte counts, for the driver's memory checks (absent ones skipped).
struct CheckedArray {
  std::uint64_t address, bytes;
  const char *name;
};
std::array<CheckedArray, 6> cacheChecks(const PagedKvCache &c) {
  const CacheArrays a = cacheArrays(c.pages, c.kv_heads, c.page_size, c.head_dim, c.value_format);
  return {{{c.k_codes, a.bytes[0], "paged cache k_codes"},
           {c.k_block_scales, a.bytes[1], "paged cache k_block_scales"},
           {c.k_row_scales, a.bytes[2], "paged cache k_row_scales"},
           {c.v_codes, a.bytes[3], "paged cache v_codes"},
           {c.v_row_scales, a.bytes[4], "paged cache v_row_scales"},
           {c.v_block_scales, a.bytes[5], "paged cache v_block_scales"}}};
}


// Where the splits' partial states lie in the workspace: FP32 O of every split, then their LSEs.
struct PartialStates {
  std::size_t lse_offset = 0, bytes = 0; // bytes 0: one split, no workspace
};
PartialStates partialStates(const DecodeArgs &a, int splits) {
  if (splits <= 1)
    return {};
  const std::size_t rows = static_cast<std::size_t>(a.q.shape[0]) * a.q.shape[1] * a.q.shape[2];
  const std::size_t o_bytes = (splits * rows * a.q.shape[3] * 4 + 255) / 256 * 256;
  return {o_bytes, o_bytes + splits * rows * 4};
}
} // namespace

std::size_t pagedKvCacheBytes(int pages, int kv_heads, int page_size, int head_dim, KvValueFormat value_format) {
  return cacheArrays(pages, kv_heads, page_size, head_dim, value_format).total;
}

PagedKvCache pagedKvCacheAt(std::uint64_t base, int pages, int kv_heads, int page_size, int head_dim,
                            KvValueFormat value_format) {
  const CacheArrays a = cacheArrays(pages, kv_heads, page_size, head_dim, value_format);
  PagedKvCache c;
  c.k_codes = base + a.offsets[0], c.k_block_scales = base + a.offsets[1], c.k_row_scales = base + a.offsets[2];
  c.v_codes = base + a.offsets[3];
  c.v_row_scales = a.bytes[4] ? base + a.offsets[4] : 0;
  c.v_block_scales = a.bytes[5] ? base + a.offsets[5] : 0;
  c.pages = pages, c.kv_heads = kv_heads, c.page_size = page_size, c.head_dim = head_dim;
  c.value_format = value_format;
  return c;
}

llvm::Error Engine::checkPagedCacheMemory(const PagedKvCache &c) const {
  for (const CheckedArray &x : cacheChecks(c))
    if (x.bytes > 0)
      if (auto err = checkDeviceMemory(x.address, x.bytes, x.name))
        return err;
  return llvm::Error::success();
}

namespace {
// `count` elements of T from device memory at `address`, once `stream` is done (the checking mode).
template <class T>
llvm::Expected<std::vector<T>> readBack(runtime::CudaDriver &driver, std::uint64_t address, std::size_t count,
                                        void *stream) {
  std::vector<T> out(count);
  if (auto err = driver.check(driver.api().cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize"))
    return err;
  if (auto err = driver.check(driver.api().cuMemcpyDtoH(out.data(), address, count * sizeof(T)), "cuMemcpyDtoH"))
    return err;
  return out;
}
} // namespace

llvm::Error Engine::appendKv(const AppendKvArgs &a) {
  if (auto err = runtime::validateAppendKv(a))
    return err;
  const std::int64_t tokens = a.k.shape[0];
  if (tokens == 0)
    return llvm::Error::success();
  const PagedKvCache &c = a.cache;
  if (auto err = checkPagedCacheMemory(c))
    return err;
  if (auto err = checkDeviceMemory(a.slot_mapping, std::uint64_t(tokens) * 8, "append slot_mapping"))
    return err;
  if (auto err = checkTensorMemory(a.k, "append k"))
    return err;
  if (auto err = checkTensorMemory(a.v, "append v"))
    return err;

  if (config_.nonfinite == runtime::NonFinitePolicy::Check) { // (validating data: waits for the stream)
    auto slots = readBack<std::int64_t>(driver_, a.slot_mapping, std::size_t(tokens), a.stream);
    if (!slots)
      return slots.takeError();
    if (auto err = runtime::validateAppendSlots(*slots, c))
      return err;
  }

  const KernelSpec spec = defaultPagedKvSpec(c.head_dim, c.page_size, 4, target_, c.value_format);
  auto compiled = jit_->get(spec);
  if (!compiled)
    return compiled.takeError();
  const EntryPoint &entry = (*compiled)->emitted.entries.at(2);
  auto append = kernel(spec, entry.name);
  if (!append)
    return append.takeError();
  dp::AppendParams p{};
  p.cache = viewOf(c);
  p.k = a.k.data, p.v = a.v.data, p.slot_mapping = a.slot_mapping;
  p.k_token_stride = a.k.stride[0], p.k_head_stride = a.k.stride[1];
  p.v_token_stride = a.v.stride[0], p.v_head_stride = a.v.stride[1];
  p.tokens = static_cast<std::int32_t>(tokens);
  const std::int64_t rows_per_cta = entry.threads / (c.head_dim / 16);
  const std::int64_t blocks = (tokens * c.kv_heads + rows_per_cta - 1) / rows_per_cta;
  if (tokens > 0x7FFFFFFF || blocks > 0x7FFFFFFF)
    return fail(llvm::formatv("append: {0} tokens exceed one launch", tokens));
  runtime::LaunchConfig launch;
  launch.block = {unsigned(entry.threads), 1, 1};
  launch.grid = {unsigned(blocks), 1, 1};
  launch.stream = a.stream;
  void *args[] = {&p};
  return append->launch(launch, args);
}

llvm::Expected<DecodePlan> Engine::decodePlan(const DecodeArgs &a) const {
  if (auto err = runtime::validateDecode(a))
    return err;
  DecodePlan plan;
  const std::int64_t group = a.q.shape[1] / a.cache.kv_heads;
  plan.row_blocks = static_cast<int>((group * a.q.shape[2] + dp::kDecodeRowsPerCta - 1) / dp::kDecodeRowsPerCta);
  const int max_seq_len = a.max_seq_len > 0 ? a.max_seq_len : a.block_table_stride * a.cache.page_size;
  const long long base_ctas = a.q.shape[0] * a.cache.kv_heads * plan.row_blocks; // (decodeBaseCtas)
  // The plan: the caller's spec and splits where given; else the tuning database's for the shape's
  // key (fa4jit tune --decode); else the heuristic's (replay mode: a miss is an error).
  std::optional<cache::TuningDb::DecodeWinner> tuned;
  if (!a.spec || a.splits <= 0) {
    const cache::TuningKey key = runtime::decodeTuningKey(target_, a.cache.head_dim, a.cache.page_size,
                                                          a.cache.value_format, base_ctas, max_seq_len);
    tuned = tuning_->winnerDecode(key);
    if (!tuned && config_.tune == runtime::TuneMode::Replay)
      return runtime::replayMiss(*tuning_, key);
  }
  plan.from_tuning = tuned.has_value();
  const DecodeGridChoice choice = chooseDecodeGrid(base_ctas, max_seq_len, device_.sm_count);
  plan.splits = a.splits > 0 ? a.splits : tuned ? tuned->splits : choice.splits;
  plan.spec = a.spec  ? *a.spec
              : tuned ? tuned->spec
                      : defaultPagedKvSpec(a.cache.head_dim, a.cache.page_size, choice.warps, target_,
                                           a.cache.value_format);
  if (a.q.shape[0] > 65535 || std::int64_t(a.cache.kv_heads) * plan.row_blocks > 65535)
    return fail(llvm::formatv("decode: batch {0} or kv heads x row blocks {1} exceed the grid's 65535",
                              a.q.shape[0], std::int64_t(a.cache.kv_heads) * plan.row_blocks));
  return plan;
}

llvm::Expected<std::size_t> Engine::decodeWorkspaceSize(const DecodeArgs &a) const {
  auto plan = decodePlan(a);
  if (!plan)
    return plan.takeError();
  return partialStates(a, plan->splits).bytes;
}

llvm::Error Engine::decode(const DecodeArgs &a) {
  auto plan = decodePlan(a);
  if (!plan)
    return plan.takeError();
  if (runtime::isEmpty(a.q))
    return llvm::Error::success();
  const std::size_t bytes = partialStates(a, plan->splits).bytes;
  if (auto err = engine_detail::ensureBytes(driver_, workspace_->decode, bytes))
    return err;
  return decodeOn(a, *plan, bytes > 0 ? workspace_->decode.address() : 0);
}

llvm::Error Engine::decode(const DecodeArgs &a, std::uint64_t workspace, std::size_t workspace_bytes) {
  auto plan = decodePlan(a);
  if (!plan)
    return plan.takeError();
  if (runtime::isEmpty(a.q))
    return llvm::Error::success();
  const std::size_t bytes = partialStates(a, plan->splits).bytes;
  if (workspace_bytes < bytes)
    return fail(llvm::formatv("decode workspace: {0} bytes, this call needs {1} (decodeWorkspaceSize)",
                              workspace_bytes, bytes));
  if (bytes > 0 && workspace % 256)
    return fail(llvm::formatv("decode workspace: misaligned pointer {0:x}: must be 256-byte aligned", workspace));
  if (bytes > 0)
    if (auto err = checkDeviceMemory(workspace, bytes, "decode workspace"))
      return err;
  return decodeOn(a, *plan, workspace);
}

llvm::Error Engine::decodeOn(const DecodeArgs &a, const DecodePlan &plan, std::uint64_t workspace) {
  const PagedKvCache &c = a.cache;
  const std::int64_t batch = a.q.shape[0], q_heads = a.q.shape[1], queries = a.q.shape[2];
  if (auto err = checkPagedCacheMemory(c))
    return err;
  if (auto err = checkDeviceMemory(a.block_table, std::uint64_t(batch) * a.block_table_stride * 4, "decode block_table"))
    return err;
  if (auto err = checkDeviceMemory(a.seq_lens, std::uint64_t(batch) * 4, "decode seq_lens"))
    return err;
  if (auto err = checkTensorMemory(a.q, "decode q"))
    return err;
  if (auto err = checkTensorMemory(a.o, "decode o"))
    return err;
  if (a.lse)
    if (auto err = checkDeviceMemory(a.lse, std::uint64_t(batch) * q_heads * queries * 4, "decode lse"))
      return err;
  if (config_.nonfinite == runtime::NonFinitePolicy::Check) { // (validating data: waits for the stream)
    auto lens = readBack<std::int32_t>(driver_, a.seq_lens, std::size_t(batch), a.stream);
    if (!lens)
      return lens.takeError();
    auto table = readBack<std::int32_t>(driver_, a.block_table, std::size_t(batch) * a.block_table_stride, a.stream);
    if (!table)
      return table.takeError();
    if (auto err = runtime::validateDecodeIndices(*lens, *table, a.block_table_stride, c))
      return err;
  }

  auto compiled = jit_->get(plan.spec);
  if (!compiled)
    return compiled.takeError();
  const EntryPoint &decode_entry = (*compiled)->emitted.entries.at(0), &combine_entry = (*compiled)->emitted.entries.at(1);
  auto decode = kernel(plan.spec, decode_entry.name);
  if (!decode)
    return decode.takeError();

  dp::DecodeParams p{};
  p.cache = viewOf(c);
  p.q = a.q.data, p.block_table = a.block_table, p.seq_lens = a.seq_lens, p.o = a.o.data, p.lse = a.lse;
  const std::size_t state_rows = static_cast<std::size_t>(batch) * q_heads * queries;
  if (plan.splits > 1) {
    p.partial_o = workspace;
    p.partial_lse = workspace + partialStates(a, plan.splits).lse_offset;
  }
  p.q_batch_stride = a.q.stride[0], p.q_head_stride = a.q.stride[1], p.q_row_stride = a.q.stride[2];
  p.o_batch_stride = a.o.stride[0], p.o_head_stride = a.o.stride[1], p.o_row_stride = a.o.stride[2];
  p.block_table_stride = a.block_table_stride;
  p.batch = static_cast<int>(batch), p.q_heads = static_cast<int>(q_heads), p.queries = static_cast<int>(queries);
  p.splits = plan.splits, p.row_blocks = plan.row_blocks;
  const double scale = a.softmax_scale != 0.0f ? a.softmax_scale : 1.0 / std::sqrt(double(c.head_dim));
  p.score_scale = static_cast<float>(scale * M_LOG2E);

  runtime::LaunchConfig launch;
  launch.block = {unsigned(decode_entry.threads), 1, 1};
  launch.grid = {unsigned(plan.splits), unsigned(c.kv_heads * plan.row_blocks), unsigned(batch)};
  launch.dynamic_shared_bytes = static_cast<unsigned>(decode_entry.dynamic_shared_bytes);
  launch.stream = a.stream;
  void *args[] = {&p};
  if (auto err = decode->launch(launch, args))
    return err;
  if (plan.splits == 1)
    return llvm::Error::success();
  auto combine = kernel(plan.spec, combine_entry.name);
  if (!combine)
    return combine.takeError();
  const std::int64_t rows_per_cta = combine_entry.threads / (c.head_dim / 8);
  runtime::LaunchConfig combine_launch;
  combine_launch.block = {unsigned(combine_entry.threads), 1, 1};
  combine_launch.grid = {unsigned((state_rows + rows_per_cta - 1) / rows_per_cta), 1, 1};
  combine_launch.stream = a.stream;
  return combine->launch(combine_launch, args);
}

} // namespace fa4jit
