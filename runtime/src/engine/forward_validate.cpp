// Argument checks of the public API. Kernels trust their arguments (a bad stride would read
// garbage or fault), so everything a caller can get wrong is caught here with a message.
#include "fa4jit/runtime/forward_validate.h"

#include "fa4jit/paged/params.cuh"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>

namespace fa4jit::runtime {

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
const char *kDimNames[4] = {"batch", "heads", "seqlen", "head_dim"};
} // namespace

int elementBytes(DType t) { return t == DType::F32 ? 4 : 2; }

bool isEmpty(const TensorDesc &t) { return t.shape[0] == 0 || t.shape[1] == 0 || t.shape[2] == 0; }

llvm::Error validateTensor(const TensorDesc &t, const char *name, DType expected, bool allow_empty) {
  const bool empty = allow_empty && isEmpty(t);
  if (t.data == 0 && !empty)
    return fail(llvm::formatv("{0}: null data pointer", name));
  if (t.dtype != expected)
    return fail(llvm::formatv("{0}: dtype {1}, expected {2}", name, toString(t.dtype), toString(expected)));
  for (int i = 0; i < 4; ++i) {
    if (t.shape[i] < 0 || (t.shape[i] == 0 && !(allow_empty && i < 3)))
      return fail(llvm::formatv("{0}: {1} is {2}; every dimension must be at least 1 (empty sequence?)", name,
                                kDimNames[i], t.shape[i]));
    if (t.stride[i] < 0)
      return fail(llvm::formatv("{0}: negative stride {1} for {2}", name, t.stride[i], kDimNames[i]));
  }
  if (t.shape[3] != 64 && t.shape[3] != 128 && t.shape[3] != 256)
    return fail(llvm::formatv("{0}: unsupported head dim {1} (supported: 64, 128, 256)", name, t.shape[3]));
  if (t.stride[3] != 1)
    return fail(llvm::formatv("{0}: head_dim stride is {1}; the head dim must be contiguous", name, t.stride[3]));
  if (t.shape[0] > (1 << 30) || t.shape[1] > (1 << 16) || t.shape[2] > (1 << 30))
    return fail(llvm::formatv("{0}: shape [{1}, {2}, {3}, {4}] is beyond the supported range", name, t.shape[0],
                              t.shape[1], t.shape[2], t.shape[3]));
  if (t.data % 16)
    return fail(llvm::formatv("{0}: misaligned pointer {1:x}: must be 16-byte aligned", name, t.data));
  const int eb = elementBytes(t.dtype);
  for (int i = 0; i < 3; ++i)
    if (t.shape[i] > 1 && (t.stride[i] * eb) % 16)
      return fail(llvm::formatv("{0}: {1} stride of {2} elements is not a multiple of 16 bytes", name,
                                kDimNames[i], t.stride[i]));
  return llvm::Error::success();
}

llvm::Error validateTensor16(const TensorDesc &t, const char *name, bool allow_empty) {
  if (t.dtype != DType::BF16 && t.dtype != DType::F16)
    return fail(llvm::formatv("{0}: dtype {1}, expected bf16 or f16", name, toString(t.dtype)));
  return validateTensor(t, name, t.dtype, allow_empty);
}

llvm::Error validateForwardShapes(const TensorDesc &q, const TensorDesc &k, const TensorDesc &v,
                                  const TensorDesc &o, std::uint64_t lse) {
  if (auto e = validateTensor16(q, "q", /*allow_empty=*/true))
    return e;
  if (auto e = validateTensor16(k, "k", /*allow_empty=*/true))
    return e;
  if (auto e = validateTensor16(v, "v", /*allow_empty=*/true))
    return e;
  if (auto e = validateTensor16(o, "o", /*allow_empty=*/true))
    return e;
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    return fail(llvm::formatv("q, k and v dtypes differ ({0}, {1}, {2})", toString(q.dtype), toString(k.dtype),
                              toString(v.dtype)));
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0])
    return fail(llvm::formatv("batch mismatch: q {0}, k {1}, v {2}", q.shape[0], k.shape[0], v.shape[0]));
  if (k.shape[3] != q.shape[3] || v.shape[3] != q.shape[3])
    return fail(llvm::formatv("head dim mismatch: q {0}, k {1}, v {2}", q.shape[3], k.shape[3], v.shape[3]));
  if (k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2])
    return fail(llvm::formatv("k [{0} heads, {1} keys] and v [{2} heads, {3} keys] differ", k.shape[1], k.shape[2],
                              v.shape[1], v.shape[2]));
  if (k.shape[1] == 0 ? q.shape[1] != 0 : q.shape[1] % k.shape[1] != 0)
    return fail(llvm::formatv("query heads {0} are not a multiple of key/value heads {1}", q.shape[1], k.shape[1]));
  for (int i = 0; i < 4; ++i)
    if (o.shape[i] != q.shape[i])
      return fail(llvm::formatv("o shape [{0}, {1}, {2}, {3}] differs from q [{4}, {5}, {6}, {7}]", o.shape[0],
                                o.shape[1], o.shape[2], o.shape[3], q.shape[0], q.shape[1], q.shape[2],
                                q.shape[3]));
  if (lse % 4)
    return fail(llvm::formatv("lse: misaligned pointer {0:x}: must be 4-byte aligned", lse));
  return llvm::Error::success();
}

llvm::Error validateQuantizedForward(const QuantizedForwardArgs &a) {
  if (a.route == Route::Bf16)
    return fail("route bf16 takes BF16 inputs: use forward(ForwardArgs)");
  if (!a.q || !a.k || !a.v)
    return fail("quantized forward: q, k and v must all be given");
  if ((a.q->format != QuantFormat::Nvfp4 && a.q->format != QuantFormat::E4m3Rows) || a.k->format != a.q->format)
    return fail(llvm::formatv("quantized forward: q and k must both be NVFP4 or both E4M3 rows, got {0} and {1}",
                              toString(a.q->format), toString(a.k->format)));
  const QuantFormat wantV = a.route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead;
  if (a.v->format != wantV)
    return fail(llvm::formatv("quantized forward: route {0} needs v as {1}, got {2}", toString(a.route),
                              toString(wantV), toString(a.v->format)));
  if (a.q->batch != a.k->batch || a.k->batch != a.v->batch)
    return fail("quantized forward: batch sizes of q, k, v differ");
  if (a.q->head_dim != a.k->head_dim || a.k->head_dim != a.v->head_dim)
    return fail("quantized forward: head dims of q, k, v differ");
  if (a.k->heads != a.v->heads || a.k->seqlen != a.v->seqlen)
    return fail("quantized forward: k and v heads or lengths differ");
  if (a.k->heads <= 0 || a.q->heads % a.k->heads)
    return fail(llvm::formatv("query heads {0} are not a multiple of key/value heads {1}", a.q->heads, a.k->heads));
  if (auto e = validateTensor16(a.o, "o"))
    return e;
  if (a.o.shape[0] != a.q->batch || a.o.shape[1] != a.q->heads || a.o.shape[2] != a.q->seqlen ||
      a.o.shape[3] != a.q->head_dim)
    return fail("quantized forward: o's shape differs from q's");
  if (a.lse % 4)
    return fail("lse: misaligned pointer: must be 4-byte aligned");
  return llvm::Error::success();
}

namespace {
llvm::Error checkShape(const TensorDesc &t, const char *name, const QuantizedTensor &like, const char *like_name) {
  if (auto e = validateTensor(t, name, DType::BF16, /*allow_empty=*/true))
    return e;
  if (t.shape[0] != like.batch || t.shape[1] != like.heads || t.shape[2] != like.seqlen || t.shape[3] != like.head_dim)
    return fail(llvm::formatv("backward: {0} is [{1}, {2}, {3}, {4}]; {5} needs [{6}, {7}, {8}, {9}]", name, t.shape[0],
                              t.shape[1], t.shape[2], t.shape[3], like_name, like.batch, like.heads, like.seqlen,
                              like.head_dim));
  return llvm::Error::success();
}
} // namespace

llvm::Error validateBackward(const BackwardArgs &a) {
  if (!a.q || !a.k || !a.v)
    return fail("backward: q, k and v (the forward's saved operands) must all be given");
  if (a.q->format != QuantFormat::Nvfp4 || a.k->format != QuantFormat::Nvfp4)
    return fail(llvm::formatv("backward: q and k must be NVFP4 as the forward saved them, got {0} and {1}",
                              toString(a.q->format), toString(a.k->format)));
  const QuantFormat want_v = a.pv == BackwardPvFormat::Mxfp4 ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead;
  if (a.v->format != want_v)
    return fail(llvm::formatv("backward: pv {0} needs v as {1}, got {2}", toString(a.pv), toString(want_v),
                              toString(a.v->format)));
  if (a.q->head_dim != a.k->head_dim || a.k->head_dim != a.v->head_dim)
    return fail("backward: head dims of q, k, v differ");
  if (a.q->head_dim != 64 && a.q->head_dim != 128)
    return fail(llvm::formatv("backward: head dim {0} is not 64 or 128", a.q->head_dim));
  if (a.q->batch != a.k->batch || a.k->batch != a.v->batch)
    return fail("backward: batch sizes of q, k, v differ");
  if (a.k->heads != a.v->heads || a.k->seqlen != a.v->seqlen)
    return fail("backward: k and v heads or lengths differ");
  if (a.k->heads <= 0 || a.q->heads % a.k->heads)
    return fail(llvm::formatv("backward: query heads {0} are not a multiple of key/value heads {1}", a.q->heads,
                              a.k->heads));
  const struct {
    const TensorDesc &t;
    const char *name;
    const QuantizedTensor &like;
    const char *like_name;
  } tensors[] = {{a.o, "o", *a.q, "q"}, {a.d_o, "d_o", *a.q, "q"}, {a.dq, "dq", *a.q, "q"},
                 {a.dk, "dk", *a.k, "k"}, {a.dv, "dv", *a.k, "k"}};
  for (const auto &t : tensors)
    if (auto e = checkShape(t.t, t.name, t.like, t.like_name))
      return e;
  if (a.qk == BackwardQkOperands::Bf16) {
    if (auto e = checkShape(a.q_bf16, "q_bf16", *a.q, "q"))
      return e;
    if (auto e = checkShape(a.k_bf16, "k_bf16", *a.k, "k"))
      return e;
  }
  if (a.lse == 0 && a.q->batch * a.q->heads * a.q->seqlen > 0)
    return fail("backward: lse (the forward's, float [B, Hq, Sq]) is required");
  if (a.lse % 4)
    return fail("lse: misaligned pointer: must be 4-byte aligned");
  return llvm::Error::success();
}

llvm::Error validateMerge(const MergeArgs &a) {
  if (a.parts.empty() || a.parts.size() > static_cast<std::size_t>(kMaxMergeParts))
    return fail(llvm::formatv("merge: {0} parts; a merge takes 1 to {1} (merge merged states for more)",
                              a.parts.size(), kMaxMergeParts));
  const DType type = a.o.dtype;
  if (type != DType::BF16 && type != DType::F16 && type != DType::F32)
    return fail(llvm::formatv("merge o: dtype {0}, expected bf16, f16 or f32", toString(type)));
  if (auto e = validateTensor(a.o, "merge o", type, /*allow_empty=*/true))
    return e;
  if (a.lse % 4)
    return fail(llvm::formatv("merge lse: misaligned pointer {0:x}: must be 4-byte aligned", a.lse));
  for (std::size_t i = 0; i < a.parts.size(); ++i) {
    const AttentionState &part = a.parts[i];
    char name[48]; // (no allocation on a good call)
    std::snprintf(name, sizeof name, "merge part %zu o", i);
    if (part.o.dtype != type)
      return fail(llvm::formatv("{0}: dtype {1}, the merged o's is {2}", name, toString(part.o.dtype), toString(type)));
    if (auto e = validateTensor(part.o, name, type, /*allow_empty=*/true))
      return e;
    for (int d = 0; d < 4; ++d)
      if (part.o.shape[d] != a.o.shape[d])
        return fail(llvm::formatv("{0}: shape [{1}, {2}, {3}, {4}] differs from the merged o's [{5}, {6}, {7}, {8}]",
                                  name, part.o.shape[0], part.o.shape[1], part.o.shape[2], part.o.shape[3],
                                  a.o.shape[0], a.o.shape[1], a.o.shape[2], a.o.shape[3]));
    if (part.lse == 0 && !isEmpty(a.o))
      return fail(llvm::formatv("merge part {0} lse: null pointer (a part's LSE is its weight)", i));
    if (part.lse % 4)
      return fail(llvm::formatv("merge part {0} lse: misaligned pointer {1:x}: must be 4-byte aligned", i, part.lse));
  }
  return llvm::Error::success();
}

} // namespace fa4jit::runtime

namespace fa4jit::runtime {

llvm::Error validatePagedCache(const PagedKvCache &c) {
  if (c.pages < 1 || c.kv_heads < 1)
    return fail(llvm::formatv("paged cache: {0} pages of {1} kv heads; both must be at least 1", c.pages, c.kv_heads));
  if (c.page_size < 16 || c.page_size > 256 || (c.page_size & (c.page_size - 1)))
    return fail(llvm::formatv("paged cache: page_size {0} is not a power of two in [16, 256]", c.page_size));
  if (c.head_dim != 64 && c.head_dim != 128)
    return fail(llvm::formatv("paged cache: head_dim {0} is not 64 or 128", c.head_dim));
  struct Array {
    std::uint64_t address;
    unsigned alignment;
    const char *name;
  };
  if (c.value_format != KvValueFormat::Fp8 && c.value_format != KvValueFormat::Mxfp4)
    return fail(llvm::formatv("paged cache: unknown value format {0}", int(c.value_format)));
  const bool mx = c.value_format == KvValueFormat::Mxfp4;
  // (16 bytes everywhere: decode's shared-memory ring copies each step's rows in 16-byte pieces)
  const Array arrays[] = {{c.k_codes, 16, "k_codes"},
                          {c.k_block_scales, 16, "k_block_scales"},
                          {c.k_row_scales, 16, "k_row_scales"},
                          {c.v_codes, 16, "v_codes"},
                          {mx ? c.v_block_scales : c.v_row_scales, 16, mx ? "v_block_scales" : "v_row_scales"}};
  for (const Array &a : arrays) {
    if (a.address == 0)
      return fail(llvm::formatv("paged cache {0}: null pointer", a.name));
    if (a.address % a.alignment)
      return fail(llvm::formatv("paged cache {0}: misaligned pointer {1:x}: must be {2}-byte aligned", a.name,
                                a.address, a.alignment));
  }
  return llvm::Error::success();
}

llvm::Error validateAppendKv(const AppendKvArgs &a) {
  if (auto e = validatePagedCache(a.cache))
    return e;
  for (const auto &[t, name] : {std::pair{&a.k, "append k"}, std::pair{&a.v, "append v"}}) {
    if (auto e = validateTensor(*t, name, DType::BF16, /*allow_empty=*/true))
      return e;
    if (t->shape[1] != a.cache.kv_heads || t->shape[2] != 1 || t->shape[3] != a.cache.head_dim)
      return fail(llvm::formatv("{0}: shape [{1}, {2}, {3}, {4}], expected [tokens, {5}, 1, {6}] (the cache's kv "
                                "heads and head dim)",
                                name, t->shape[0], t->shape[1], t->shape[2], t->shape[3], a.cache.kv_heads,
                                a.cache.head_dim));
  }
  if (a.k.shape[0] != a.v.shape[0])
    return fail(llvm::formatv("append: k has {0} tokens, v {1}", a.k.shape[0], a.v.shape[0]));
  if (a.k.shape[0] > 0 && a.slot_mapping == 0)
    return fail("append slot_mapping: null pointer");
  if (a.slot_mapping % 8)
    return fail(llvm::formatv("append slot_mapping: misaligned pointer {0:x}: must be 8-byte aligned (int64)",
                              a.slot_mapping));
  return llvm::Error::success();
}

llvm::Error validateDecode(const DecodeArgs &a) {
  if (auto e = validatePagedCache(a.cache))
    return e;
  if (auto e = validateTensor(a.q, "decode q", DType::BF16, /*allow_empty=*/true))
    return e;
  if (auto e = validateTensor(a.o, "decode o", DType::BF16, /*allow_empty=*/true))
    return e;
  for (int d = 0; d < 4; ++d)
    if (a.o.shape[d] != a.q.shape[d])
      return fail(llvm::formatv("decode o: shape [{0}, {1}, {2}, {3}] differs from q's [{4}, {5}, {6}, {7}]",
                                a.o.shape[0], a.o.shape[1], a.o.shape[2], a.o.shape[3], a.q.shape[0], a.q.shape[1],
                                a.q.shape[2], a.q.shape[3]));
  if (a.q.shape[3] != a.cache.head_dim)
    return fail(llvm::formatv("decode q: head_dim {0}, the cache's is {1}", a.q.shape[3], a.cache.head_dim));
  if (a.q.shape[1] % a.cache.kv_heads)
    return fail(llvm::formatv("decode q: {0} query heads is not a multiple of the cache's {1} kv heads", a.q.shape[1],
                              a.cache.kv_heads));
  if (a.block_table_stride < 1)
    return fail(llvm::formatv("decode block_table_stride {0}: must be at least 1", a.block_table_stride));
  if (a.block_table == 0 || a.block_table % 4)
    return fail(llvm::formatv("decode block_table: {0} pointer {1:x} (int32, 4-byte aligned)",
                              a.block_table == 0 ? "null" : "misaligned", a.block_table));
  if (a.seq_lens == 0 || a.seq_lens % 4)
    return fail(llvm::formatv("decode seq_lens: {0} pointer {1:x} (int32, 4-byte aligned)",
                              a.seq_lens == 0 ? "null" : "misaligned", a.seq_lens));
  const std::int64_t capacity = static_cast<std::int64_t>(a.block_table_stride) * a.cache.page_size;
  if (a.max_seq_len < 0 || a.max_seq_len > capacity)
    return fail(llvm::formatv("decode max_seq_len {0}: outside [0, {1}] (block_table_stride {2} x page_size {3})",
                              a.max_seq_len, capacity, a.block_table_stride, a.cache.page_size));
  if (a.splits < 0 || a.splits > device::paged::kMaxDecodeSplits)
    return fail(llvm::formatv("decode splits {0}: must be 0 (the heuristic's) to {1}", a.splits,
                              device::paged::kMaxDecodeSplits));
  if (a.lse % 4)
    return fail(llvm::formatv("decode lse: misaligned pointer {0:x}: must be 4-byte aligned", a.lse));
  if (a.spec) {
    const KernelSpec &s = *a.spec;
    if (s.family != KernelFamily::PagedKv || s.paged.head_dim != a.cache.head_dim ||
        s.paged.page_size != a.cache.page_size || s.paged.value_format != a.cache.value_format)
      return fail(llvm::formatv("decode spec: a {0} spec of head dim {1}, page size {2} and {3} V cannot run a "
                                "cache of head dim {4}, page size {5} and {6} V",
                                toString(s.family), s.paged.head_dim, s.paged.page_size, toString(s.paged.value_format),
                                a.cache.head_dim, a.cache.page_size, toString(a.cache.value_format)));
  }
  return llvm::Error::success();
}

llvm::Error validateDecodeIndices(llvm::ArrayRef<std::int32_t> seq_lens, llvm::ArrayRef<std::int32_t> block_table,
                                  int block_table_stride, const PagedKvCache &cache) {
  const std::int64_t capacity = static_cast<std::int64_t>(block_table_stride) * cache.page_size;
  for (std::size_t b = 0; b < seq_lens.size(); ++b) {
    const std::int64_t len = seq_lens[b];
    if (len < 0 || len > capacity)
      return fail(llvm::formatv("decode seq_lens[{0}] = {1}: outside [0, {2}] (block_table_stride {3} x page_size "
                                "{4}); the engine checks indices (FA4JIT_CHECK_FINITE, EngineOptions::nonfinite)",
                                b, len, capacity, block_table_stride, cache.page_size));
    for (std::int64_t blk = 0; blk * cache.page_size < len; ++blk) {
      const std::int32_t page = block_table[b * block_table_stride + blk];
      if (page < 0 || page >= cache.pages)
        return fail(llvm::formatv("decode block_table[{0}][{1}] = {2}: outside the cache's {3} pages (sequence {0} "
                                  "has {4} tokens)",
                                  b, blk, page, cache.pages, len));
    }
  }
  return llvm::Error::success();
}

llvm::Error validateAppendSlots(llvm::ArrayRef<std::int64_t> slots, const PagedKvCache &cache) {
  const std::int64_t capacity = static_cast<std::int64_t>(cache.pages) * cache.page_size;
  for (std::size_t t = 0; t < slots.size(); ++t)
    if (slots[t] >= capacity)
      return fail(llvm::formatv("append slot_mapping[{0}] = {1}: past the cache's {2} slots ({3} pages of {4}); the "
                                "engine checks indices (FA4JIT_CHECK_FINITE, EngineOptions::nonfinite)",
                                t, slots[t], capacity, cache.pages, cache.page_size));
  return llvm::Error::success();
}

} // namespace fa4jit::runtime
