// The public API's argument checks (no GPU needed): each bad input gets an error that names what
// is wrong, and a good one passes.
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/runtime/forward_validate.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace fa4jit;

namespace {

constexpr uint64_t kBase = 0x7f0000000000ull; // 16-byte aligned fake device address

std::string errorOf(llvm::Error e) { return e ? llvm::toString(std::move(e)) : std::string(); }

struct Shapes {
  TensorDesc q = TensorDesc::contiguous(kBase, DType::BF16, 2, 8, 100, 128);
  TensorDesc k = TensorDesc::contiguous(kBase + 0x100000, DType::BF16, 2, 2, 300, 128);
  TensorDesc v = TensorDesc::contiguous(kBase + 0x200000, DType::BF16, 2, 2, 300, 128);
  TensorDesc o = TensorDesc::contiguous(kBase + 0x300000, DType::BF16, 2, 8, 100, 128);
  uint64_t lse = kBase + 0x400000;
  std::string check() const { return errorOf(runtime::validateForwardShapes(q, k, v, o, lse)); }
};

} // namespace

TEST_CASE("valid grouped-query shapes pass", "[runtime][validate]") { CHECK(Shapes{}.check().empty()); }

TEST_CASE("empty batches, heads, queries and keys are valid calls", "[runtime][validate]") {
  for (int dim : {0, 1, 2}) { // batch, heads, queries: Engine::forward does nothing
    Shapes s;
    s.q.shape[dim] = s.o.shape[dim] = 0;
    if (dim != 2)
      s.k.shape[dim] = s.v.shape[dim] = 0;
    s.q.data = s.o.data = 0; // (an empty tensor may have no storage)
    INFO("dim " << dim);
    CHECK(s.check().empty());
    CHECK(runtime::isEmpty(s.q));
  }
  Shapes s; // no keys: O = 0, LSE = -inf (Engine::forward)
  s.k.shape[2] = s.v.shape[2] = 0;
  s.k.data = s.v.data = 0;
  CHECK(s.check().empty());
  CHECK(runtime::isEmpty(s.k));
  CHECK_FALSE(runtime::isEmpty(s.q));
}

TEST_CASE("bad forward arguments are named", "[runtime][validate]") {
  {
    Shapes s;
    s.q.shape[3] = s.k.shape[3] = s.v.shape[3] = s.o.shape[3] = 96;
    CHECK(s.check().find("unsupported head dim 96") != std::string::npos);
  }
  {
    Shapes s;
    s.k.data += 8;
    CHECK(s.check().find("k: misaligned pointer") != std::string::npos);
  }
  {
    Shapes s;
    s.q.shape[2] = -1;
    CHECK(s.check().find("q: seqlen is -1") != std::string::npos);
  }
  {
    Shapes s;
    s.q.shape[3] = s.k.shape[3] = s.v.shape[3] = s.o.shape[3] = 0;
    CHECK(s.check().find("q: head_dim is 0") != std::string::npos);
  }
  {
    Shapes s; // key/value heads 0 beside query heads: no GQA ratio (and no division by zero)
    s.k.shape[1] = s.v.shape[1] = 0;
    CHECK(s.check().find("not a multiple of key/value heads 0") != std::string::npos);
  }
  {
    Shapes s;
    s.k.data += 8;
    CHECK(s.check().find("k: misaligned pointer 0x7f0000100008:") != std::string::npos); // (one 0x)
  }
  {
    Shapes s;
    s.v.stride[3] = 2;
    CHECK(s.check().find("v: head_dim stride is 2") != std::string::npos);
  }
  {
    Shapes s;
    s.q.shape[1] = s.o.shape[1] = 7;
    CHECK(s.check().find("not a multiple of key/value heads") != std::string::npos);
  }
  {
    Shapes s;
    s.o.shape[2] = 99;
    CHECK(s.check().find("o shape") != std::string::npos);
  }
  {
    Shapes s;
    s.q.dtype = DType::F32;
    CHECK(s.check().find("q: dtype f32, expected bf16 or f16") != std::string::npos);
  }
  {
    Shapes s; // FP16 inputs and output pass; so does an FP16 o beside BF16 inputs
    s.q.dtype = s.k.dtype = s.v.dtype = s.o.dtype = DType::F16;
    CHECK(s.check().empty());
    s.q.dtype = s.k.dtype = s.v.dtype = DType::BF16;
    CHECK(s.check().empty());
    s.v.dtype = DType::F16;
    CHECK(s.check().find("q, k and v dtypes differ (bf16, bf16, f16)") != std::string::npos);
  }
  {
    Shapes s; // (an FP16 row of 129 elements is 258 bytes, as BF16's)
    s.q.dtype = s.k.dtype = s.v.dtype = DType::F16;
    s.k.stride[2] = 129;
    CHECK(s.check().find("k: seqlen stride of 129 elements is not a multiple of 16 bytes") != std::string::npos);
  }
  {
    Shapes s;
    s.q.stride[2] = 129; // 258 bytes: rows would not be 16-byte aligned
    CHECK(s.check().find("not a multiple of 16 bytes") != std::string::npos);
  }
  {
    Shapes s;
    s.lse += 2;
    CHECK(s.check().find("lse: misaligned") != std::string::npos);
  }
  {
    Shapes s;
    s.k.data = 0;
    CHECK(s.check().find("k: null data pointer") != std::string::npos);
  }
}

namespace {
// Saved operands (no device memory: the checks read only their shapes and formats): NVFP4 q
// [1, 4, 10, 64], k and FP8 v [1, 2, 20, 64].
struct SavedOperands {
  QuantizedTensor q, k, v;
  SavedOperands() {
    q.format = k.format = QuantFormat::Nvfp4;
    v.format = QuantFormat::Fp8PerHead;
    q.batch = k.batch = v.batch = 1;
    q.heads = 4, k.heads = v.heads = 2;
    q.seqlen = 10, k.seqlen = v.seqlen = 20;
    q.head_dim = k.head_dim = v.head_dim = 64;
  }
};
} // namespace

TEST_CASE("quantized forward checks formats against the route", "[runtime][validate]") {
  SavedOperands saved;
  QuantizedTensor &q = saved.q, &k = saved.k, &v = saved.v;
  QuantizedForwardArgs a;
  a.q = &q, a.k = &k, a.v = &v;
  a.o = TensorDesc::contiguous(kBase, DType::BF16, 1, 4, 10, 64);
  a.route = Route::DirectP;
  CHECK(errorOf(runtime::validateQuantizedForward(a)).find("needs v as mxfp4") != std::string::npos);
  a.route = Route::Nvfp8;
  CHECK(errorOf(runtime::validateQuantizedForward(a)).empty());
  a.route = Route::Bf16;
  CHECK(errorOf(runtime::validateQuantizedForward(a)).find("takes BF16 inputs") != std::string::npos);
}

TEST_CASE("backward checks the saved operands, the gradients' shapes and the P/V format", "[runtime][validate]") {
  SavedOperands saved;
  QuantizedTensor &q = saved.q, &k = saved.k, &v = saved.v;
  BackwardArgs a;
  a.q = &q, a.k = &k, a.v = &v;
  a.q_bf16 = a.o = a.d_o = a.dq = TensorDesc::contiguous(kBase, DType::BF16, 1, 4, 10, 64);
  a.k_bf16 = a.dk = a.dv = TensorDesc::contiguous(kBase, DType::BF16, 1, 2, 20, 64);
  a.lse = kBase;
  CHECK(errorOf(runtime::validateBackward(a)).empty());

  a.pv = BackwardPvFormat::Mxfp4;
  CHECK(errorOf(runtime::validateBackward(a)).find("pv mxfp4 needs v as mxfp4, got fp8") != std::string::npos);
  a.pv = BackwardPvFormat::E4m3;
  a.dk = TensorDesc::contiguous(kBase, DType::BF16, 1, 4, 20, 64);
  CHECK(errorOf(runtime::validateBackward(a)).find("dk is [1, 4, 20, 64]; k needs [1, 2, 20, 64]") !=
        std::string::npos);
  a.dk = a.dv;
  a.dq.dtype = DType::F16;
  CHECK(errorOf(runtime::validateBackward(a)).find("dq: dtype f16, expected bf16") != std::string::npos);
  a.dq.dtype = DType::BF16;
  a.lse = 0;
  CHECK(errorOf(runtime::validateBackward(a)).find("lse (the forward's") != std::string::npos);
  a.lse = kBase;
  // The saved Q/K variant does not read the BF16 inputs.
  a.q_bf16 = TensorDesc{};
  CHECK(errorOf(runtime::validateBackward(a)).find("q_bf16") != std::string::npos);
  a.qk = BackwardQkOperands::SavedNvfp4;
  CHECK(errorOf(runtime::validateBackward(a)).empty());
  q.head_dim = k.head_dim = v.head_dim = 256;
  CHECK(errorOf(runtime::validateBackward(a)).find("head dim 256 is not 64 or 128") != std::string::npos);
}

TEST_CASE("merge checks the parts against the merged state", "[runtime][validate]") {
  const TensorDesc o = TensorDesc::contiguous(kBase, DType::F32, 2, 4, 33, 128);
  std::vector<AttentionState> parts(3, AttentionState{TensorDesc::contiguous(kBase + 0x100000, DType::F32, 2, 4, 33, 128),
                                                      kBase + 0x200000});
  auto check = [&](const std::vector<AttentionState> &p, std::uint64_t lse = kBase + 0x300000) {
    MergeArgs m;
    m.parts = p;
    m.o = o;
    m.lse = lse;
    return errorOf(runtime::validateMerge(m));
  };
  CHECK(check(parts).empty());
  CHECK(check(parts, 0).empty()); // the merged LSE is optional
  CHECK(check({}).find("0 parts") != std::string::npos);
  CHECK(check(std::vector<AttentionState>(17, parts[0])).find("17 parts") != std::string::npos);
  CHECK(check(parts, kBase + 2).find("merge lse: misaligned") != std::string::npos);
  {
    auto p = parts;
    p[1].o.dtype = DType::BF16;
    CHECK(check(p).find("merge part 1 o: dtype bf16, the merged o's is f32") != std::string::npos);
  }
  {
    auto p = parts;
    p[2].o.shape[1] = 8;
    p[2].o.stride[0] = 8 * 33 * 128;
    CHECK(check(p).find("merge part 2 o: shape [2, 8, 33, 128] differs") != std::string::npos);
  }
  {
    auto p = parts;
    p[0].lse = 0;
    CHECK(check(p).find("merge part 0 lse: null pointer") != std::string::npos);
  }
  {
    auto p = parts;
    p[0].o.stride[2] = 130; // rows 520 bytes apart: not a multiple of 16
    CHECK(check(p).find("seqlen stride") != std::string::npos);
  }
  {
    MergeArgs m;
    m.parts = parts;
    m.o = o;
    m.o.dtype = DType::F16;
    m.o.shape[3] = 96;
    CHECK(errorOf(runtime::validateMerge(m)).find("unsupported head dim 96") != std::string::npos);
  }
}

TEST_CASE("paged cache, append and decode arguments are checked with messages that name the field",
          "[runtime][validate][paged]") {
  const PagedKvCache cache = pagedKvCacheAt(kBase, 64, 8, 16, 128);
  CHECK(errorOf(runtime::validatePagedCache(cache)).empty());
  {
    PagedKvCache c = cache;
    c.page_size = 48;
    CHECK(errorOf(runtime::validatePagedCache(c)).find("page_size 48") != std::string::npos);
    c = cache;
    c.head_dim = 256;
    CHECK(errorOf(runtime::validatePagedCache(c)).find("head_dim 256") != std::string::npos);
    c = cache;
    c.v_row_scales += 4;
    CHECK(errorOf(runtime::validatePagedCache(c)).find("v_row_scales: misaligned") != std::string::npos);
    c = cache;
    c.k_block_scales += 8; // (decode copies every array in 16-byte pieces)
    CHECK(errorOf(runtime::validatePagedCache(c)).find("k_block_scales: misaligned") != std::string::npos);
    c = cache;
    c.k_codes = 0;
    CHECK(errorOf(runtime::validatePagedCache(c)).find("k_codes: null") != std::string::npos);
    c = cache;
    c.pages = 0;
    CHECK(errorOf(runtime::validatePagedCache(c)).find("0 pages") != std::string::npos);
  }

  AppendKvArgs app;
  app.cache = cache;
  app.k = {kBase, DType::BF16, {5, 8, 1, 128}, {1024, 128, 128, 1}};
  app.v = app.k;
  app.slot_mapping = kBase;
  CHECK(errorOf(runtime::validateAppendKv(app)).empty());
  {
    AppendKvArgs a = app;
    a.k.shape[1] = 4;
    CHECK(errorOf(runtime::validateAppendKv(a)).find("expected [tokens, 8, 1, 128]") != std::string::npos);
    a = app;
    a.v.shape[0] = 6;
    CHECK(errorOf(runtime::validateAppendKv(a)).find("k has 5 tokens, v 6") != std::string::npos);
    a = app;
    a.slot_mapping = kBase + 4;
    CHECK(errorOf(runtime::validateAppendKv(a)).find("8-byte aligned") != std::string::npos);
    a = app;
    a.k.dtype = DType::F16;
    CHECK(errorOf(runtime::validateAppendKv(a)).find("dtype f16") != std::string::npos);
    a = app;
    a.k.shape[0] = a.v.shape[0] = 0;
    a.slot_mapping = 0;
    CHECK(errorOf(runtime::validateAppendKv(a)).empty()); // nothing to append
  }

  DecodeArgs dec;
  dec.cache = cache;
  dec.q = TensorDesc::contiguous(kBase, DType::BF16, 4, 32, 1, 128);
  dec.o = dec.q;
  dec.block_table = kBase, dec.block_table_stride = 16, dec.seq_lens = kBase;
  CHECK(errorOf(runtime::validateDecode(dec)).empty());
  {
    DecodeArgs a = dec;
    a.q.shape[1] = a.o.shape[1] = 12;
    CHECK(errorOf(runtime::validateDecode(a)).find("12 query heads is not a multiple") != std::string::npos);
    a = dec;
    a.q.shape[3] = a.o.shape[3] = 64;
    CHECK(errorOf(runtime::validateDecode(a)).find("head_dim 64, the cache's is 128") != std::string::npos);
    a = dec;
    a.o.shape[2] = 2;
    CHECK(errorOf(runtime::validateDecode(a)).find("differs from q's") != std::string::npos);
    a = dec;
    a.block_table_stride = 0;
    CHECK(errorOf(runtime::validateDecode(a)).find("block_table_stride 0") != std::string::npos);
    a = dec;
    a.seq_lens = kBase + 2;
    CHECK(errorOf(runtime::validateDecode(a)).find("seq_lens: misaligned") != std::string::npos);
    a = dec;
    a.max_seq_len = 16 * 16 + 1;
    CHECK(errorOf(runtime::validateDecode(a)).find("max_seq_len 257") != std::string::npos);
    a = dec;
    a.splits = 17;
    CHECK(errorOf(runtime::validateDecode(a)).find("splits 17") != std::string::npos);
    a = dec;
    a.spec = defaultPagedKvSpec(128, 64, 4, Target::Sm90a);
    CHECK(errorOf(runtime::validateDecode(a)).find("page size 64") != std::string::npos);
    a = dec;
    a.q.shape[0] = a.o.shape[0] = 0;
    CHECK(errorOf(runtime::validateDecode(a)).empty()); // an empty batch
  }
}

TEST_CASE("the checking mode's index reads name the sequence, block and slot that is wrong", "[runtime][validate][paged]") {
  const PagedKvCache cache = pagedKvCacheAt(kBase, 10, 2, 16, 64);
  const std::vector<std::int32_t> table = {3, 4, -1, 9, 0, 12}; // 2 sequences x 3 blocks
  CHECK(errorOf(runtime::validateDecodeIndices({20, 17}, table, 3, cache)).empty());
  CHECK(errorOf(runtime::validateDecodeIndices({0, 0}, table, 3, cache)).empty());
  CHECK(errorOf(runtime::validateDecodeIndices({33, 1}, table, 3, cache)).find("block_table[0][2] = -1") !=
        std::string::npos);
  CHECK(errorOf(runtime::validateDecodeIndices({1, 40}, table, 3, cache)).find("block_table[1][2] = 12") !=
        std::string::npos);
  CHECK(errorOf(runtime::validateDecodeIndices({1, 49}, table, 3, cache)).find("seq_lens[1] = 49") != std::string::npos);
  CHECK(errorOf(runtime::validateDecodeIndices({-2, 1}, table, 3, cache)).find("seq_lens[0] = -2") != std::string::npos);
  CHECK(errorOf(runtime::validateAppendSlots({0, -1, 159}, cache)).empty());
  CHECK(errorOf(runtime::validateAppendSlots({0, 160}, cache)).find("slot_mapping[1] = 160: past the cache's 160") !=
        std::string::npos);
}
