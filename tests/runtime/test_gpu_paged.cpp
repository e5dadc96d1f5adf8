// The paged KV cache on the GPU: the append kernel against the host model bit for bit (skipped and
// out-of-range slots write nothing), decode against the host model and the FP64 reference over the
// dequantized cache (GQA, several queries, page sizes, forced and heuristic splits), capture in a
// CUDA graph, the edges (no token, a bad page, a length past the block table, a NaN row, unwritten
// rows holding NaN bytes) and bad calls as errors.
#include "gpu_fixture.h"
#include "../../runtime/src/toolchain/driver_api.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/cpu/paged.h"
#include "fa4jit/runtime/decode_fixture.h"
#include "fa4jit/runtime/decode_tuner.h"
#include "fa4jit/runtime/kernel_jit.h"
#include "paged_fixture.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

// A problem's cache on the device (unwritten bytes 0xFF: NaN scales and NaN E4M3 codes, which no
// masked key may leak) with its inputs.
struct DeviceProblem {
  runtime::DeviceBuffer cache_mem, k, v, slots, q, o, lse, block_table, seq_lens;
  PagedKvCache cache;
  int head_dim = 0;

  // `garbage_seed` 0: unwritten bytes 0xFF; else random bytes from that seed.
  explicit DeviceProblem(const PagedProblem &p, std::uint64_t garbage_seed = 0) {
    const cpu::PagedCache &c = p.cache;
    head_dim = c.head_dim;
    const std::size_t bytes = pagedKvCacheBytes(c.pages, c.kv_heads, c.page_size, c.head_dim, c.value_format);
    std::vector<std::uint8_t> poison(bytes, 0xFF);
    if (garbage_seed != 0) {
      std::mt19937_64 rng(garbage_seed);
      for (std::uint8_t &x : poison)
        x = static_cast<std::uint8_t>(rng());
    }
    cache_mem = upload(poison.data(), bytes);
    cache = pagedKvCacheAt(cache_mem.address(), c.pages, c.kv_heads, c.page_size, c.head_dim, c.value_format);
    k = upload(bf16Bits(p.k_new).data(), p.k_new.size() * 2);
    v = upload(bf16Bits(p.v_new).data(), p.v_new.size() * 2);
    slots = upload(p.slots.data(), p.slots.size() * 8);
    q = upload(bf16Bits(p.q).data(), p.q.size() * 2);
    const std::vector<std::uint8_t> out_poison(p.q.size() * 2, 0xFF);
    o = upload(out_poison.data(), out_poison.size());
    lse = upload(out_poison.data(), p.q.size() / head_dim * 4);
    block_table = upload(p.decode.block_table.data(), p.decode.block_table.size() * 4);
    seq_lens = upload(p.decode.seq_lens.data(), p.decode.seq_lens.size() * 4);
  }
  static std::vector<std::uint16_t> bf16Bits(const std::vector<float> &x) {
    std::vector<std::uint16_t> b(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      b[i] = formats::floatToBF16(x[i]);
    return b;
  }
  AppendKvArgs append(std::int64_t tokens) const {
    AppendKvArgs a;
    a.cache = cache;
    const std::int64_t H = cache.kv_heads, D = head_dim;
    a.k = {k.address(), DType::BF16, {tokens, H, 1, D}, {H * D, D, D, 1}};
    a.v = {v.address(), DType::BF16, {tokens, H, 1, D}, {H * D, D, D, 1}};
    a.slot_mapping = slots.address();
    return a;
  }
  DecodeArgs decode(const PagedProblem &p) const {
    DecodeArgs a;
    a.cache = cache;
    const cpu::DecodeProblem &d = p.decode;
    a.q = TensorDesc::contiguous(q.address(), DType::BF16, d.batch, d.q_heads, d.queries, head_dim);
    a.o = TensorDesc::contiguous(o.address(), DType::BF16, d.batch, d.q_heads, d.queries, head_dim);
    a.lse = lse.address();
    a.block_table = block_table.address(), a.block_table_stride = d.block_table_stride;
    a.seq_lens = seq_lens.address();
    return a;
  }
  std::vector<float> outO(std::size_t n) const {
    const std::vector<std::uint16_t> bits = download<std::uint16_t>(o, n);
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i)
      out[i] = formats::bf16ToFloat(bits[i]);
    return out;
  }
};

// Elements of `got` (BF16) more than one BF16 ulp from the FP32 model's value, where an element
// near zero may also miss by 2^-14 of its row's largest |O|: the kernel takes each P against its
// warp's (and split's) running maximum and the model against the row's final one, so their 16-bit
// P (hi + lo) round at different points, an error of about 2^-16 of the row's scale that a value
// near zero (cancellation) cannot hide under its own ulp.
std::size_t offByMoreThanOneUlp(const std::vector<float> &got, const std::vector<float> &model, int head_dim) {
  std::size_t off = 0;
  for (std::size_t row = 0; row * head_dim < got.size(); ++row) {
    float row_max = 0;
    for (int d = 0; d < head_dim; ++d)
      row_max = std::max(row_max, std::fabs(model[row * head_dim + d]));
    for (int d = 0; d < head_dim; ++d) {
      const std::size_t i = row * head_dim + d;
      const float ulp = std::ldexp(1.0f, std::ilogb(std::max(std::fabs(model[i]), 1e-30f)) - 7);
      off += !(std::fabs(got[i] - model[i]) <= std::max(ulp, std::ldexp(row_max, -14)));
    }
  }
  return off;
}

// The FP64 reference as the kernel's output format holds it.
std::vector<double> roundedToBf16(const std::vector<double> &x) {
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = formats::roundToBF16(static_cast<float>(x[i]));
  return out;
}

std::string decodeError(const DecodeArgs &a) {
  llvm::Error e = gpuEngine().decode(a);
  return e ? llvm::toString(std::move(e)) : std::string();
}

} // namespace

TEST_CASE("append writes exactly the host model's bits and nothing for skipped slots", "[gpu][paged]") {
  for (KvValueFormat value : {KvValueFormat::Fp8, KvValueFormat::Mxfp4})
  for (int head_dim : {64, 128}) {
    const std::uint64_t seed = freshSeed();
    INFO("head_dim " << head_dim << ", " << toString(value) << " V, seed " << seed);
    PagedProblem prob({33, 100, 7}, 4, 1, 1, head_dim, 16, 1.0f, seed, /*spare_pages=*/2, value);
    const std::int64_t capacity = std::int64_t(prob.cache.pages) * 16;
    prob.slots[3] = -1;          // padding of a captured batch
    prob.slots[40] = capacity;   // past the cache
    prob.k_new[(50 * 4 + 1) * head_dim + 3] = std::numeric_limits<float>::quiet_NaN(); // token 50, head 1
    prob.v_new[(60 * 4 + 2) * head_dim + 7] = std::numeric_limits<float>::infinity();  // token 60, head 2
    cpu::PagedCache model = cpu::PagedCache::create(prob.cache.pages, 4, 16, head_dim, value);
    REQUIRE_SUCCESS(cpu::appendModel(model, prob.k_new, prob.v_new, prob.slots));
    DeviceProblem dev(prob);
    REQUIRE_SUCCESS(gpuEngine().appendKv(dev.append(prob.tokens())));
    const bool mx = value == KvValueFormat::Mxfp4;
    const std::size_t bytes = pagedKvCacheBytes(model.pages, 4, 16, head_dim, value);
    const std::vector<std::uint8_t> got = download<std::uint8_t>(dev.cache_mem, bytes);
    const PagedKvCache &c = dev.cache;
    const std::uint64_t base = dev.cache_mem.address();
    std::size_t mismatched = 0, untouched = 0;
    for (std::int64_t page = 0; page < model.pages; ++page)
      for (int h = 0; h < 4; ++h)
        for (int t = 0; t < 16; ++t) {
          const std::int64_t row = model.row(page, h, t);
          const bool written = std::count(prob.slots.begin(), prob.slots.end(), page * 16 + t) > 0;
          const int v_row_bytes = mx ? head_dim / 2 : head_dim;
          const std::uint8_t *kc = got.data() + (c.k_codes - base) + row * head_dim / 2;
          const std::uint8_t *vc = got.data() + (c.v_codes - base) + row * v_row_bytes;
          float g;
          std::memcpy(&g, got.data() + (c.k_row_scales - base) + row * 4, 4);
          if (!written) {
            untouched += kc[0] == 0xFF && vc[0] == 0xFF && std::isnan(g);
            continue;
          }
          const auto sameFloat = [](float a, float b) { return std::memcmp(&a, &b, 4) == 0; };
          mismatched += std::memcmp(kc, &model.k_codes[row * head_dim / 2], head_dim / 2) != 0;
          mismatched += std::memcmp(got.data() + (c.k_block_scales - base) + row * head_dim / 16,
                                    &model.k_block_scales[row * head_dim / 16], head_dim / 16) != 0;
          mismatched += std::memcmp(vc, &model.v_codes[row * v_row_bytes], v_row_bytes) != 0;
          mismatched += !sameFloat(g, model.k_row_scales[row]);
          if (mx) {
            mismatched += std::memcmp(got.data() + (c.v_block_scales - base) + row * head_dim / 32,
                                      &model.v_block_scales[row * head_dim / 32], head_dim / 32) != 0;
          } else {
            float s_v;
            std::memcpy(&s_v, got.data() + (c.v_row_scales - base) + row * 4, 4);
            mismatched += !sameFloat(s_v, model.v_row_scales[row]);
          }
        }
    CHECK(mismatched == 0);
    // 2 spare pages, the remainders of the three sequences' last pages, and the two skipped slots
    const std::int64_t written_rows = prob.tokens() - 2;
    CHECK(untouched == std::size_t(model.pages * 16 - written_rows) * 4);
  }
}

TEST_CASE("decode equals the host model within one BF16 ulp and the BF16-rounded FP64 reference within 1e-3",
          "[gpu][paged]") {
  struct Case {
    std::vector<int> lens;
    int kv_heads, group, queries, head_dim, page_size, splits;
  };
  const Case cases[] = {
      {{1, 17, 300, 2049}, 2, 4, 1, 128, 16, 0}, // GQA 4, heuristic splits
      {{4000}, 8, 4, 1, 128, 64, 16},            // one long sequence over 16 splits
      {{700, 64}, 2, 8, 3, 64, 32, 3},           // three queries, causal, 2 row blocks
      {{250, 1000}, 1, 2, 8, 128, 256, 1},       // speculative: eight queries
      {{5, 129}, 4, 1, 2, 64, 128, 2},           // MHA, a split with no keys
  };
  // The decode module: the heuristic's (warps 0: 8 at these small grids, steps in registers), or
  // forced warps and staging (kv_stages 2 and 3: the shared-memory ring).
  struct Module {
    int warps, kv_stages;
  };
  for (Module module : {Module{0, 0}, Module{4, 0}, Module{8, 3}, Module{4, 2}})
  for (KvValueFormat value : {KvValueFormat::Fp8, KvValueFormat::Mxfp4})
  for (const Case &cs : cases) {
    const std::uint64_t seed = freshSeed();
    INFO("head_dim " << cs.head_dim << ", page " << cs.page_size << ", group " << cs.group << ", queries "
                     << cs.queries << ", splits " << cs.splits << ", " << toString(value) << " V, warps "
                     << module.warps << ", kv_stages " << module.kv_stages << ", seed " << seed);
    const PagedProblem prob(cs.lens, cs.kv_heads, cs.group, cs.queries, cs.head_dim, cs.page_size, 1.0f, seed, 1,
                            value);
    DeviceProblem dev(prob);
    REQUIRE_SUCCESS(gpuEngine().appendKv(dev.append(prob.tokens())));
    DecodeArgs a = dev.decode(prob);
    a.splits = cs.splits;
    if (module.warps) {
      a.spec = defaultPagedKvSpec(cs.head_dim, cs.page_size, module.warps, gpuEngine().target(), value);
      a.spec->paged.kv_stages = module.kv_stages;
    }
    REQUIRE_SUCCESS(gpuEngine().decode(a));
    const std::vector<float> got = dev.outO(prob.q.size());
    const std::vector<float> got_lse = download<float>(dev.lse, prob.q.size() / cs.head_dim);
    std::vector<float> model_o, model_lse;
    std::vector<double> ref_o, ref_lse;
    REQUIRE_SUCCESS(cpu::decodeModel(prob.cache, prob.decode, prob.q, model_o, model_lse));
    REQUIRE_SUCCESS(cpu::decodeReference(prob.cache, prob.decode, prob.q, ref_o, ref_lse));
    CHECK(offByMoreThanOneUlp(got, model_o, cs.head_dim) == 0);
    // (against the FP64 reference itself, BF16's own rounding is about 1.6e-3 of rel-L2)
    CHECK(relL2(got, roundedToBf16(ref_o)) <= 1e-3);
    for (std::size_t r = 0; r < got_lse.size(); ++r)
      REQUIRE(got_lse[r] == Approx(model_lse[r]).epsilon(2e-6).margin(1e-5));
  }
}

TEST_CASE("decode: splits change nothing beyond rounding, the ring no bit; a captured append + decode replays bit "
          "for bit",
          "[gpu][paged]") {
  const std::uint64_t seed = freshSeed();
  INFO("seed " << seed);
  const PagedProblem prob({3000, 1500}, 2, 4, 2, 128, 32, 1.0f, seed);
  DeviceProblem dev(prob);
  Engine &engine = gpuEngine();
  REQUIRE_SUCCESS(engine.appendKv(dev.append(prob.tokens())));
  DecodeArgs a = dev.decode(prob);
  a.splits = 1;
  REQUIRE_SUCCESS(engine.decode(a));
  const std::vector<float> one = dev.outO(prob.q.size());
  // The ring moves the same bytes into the same arithmetic: the same bits as the register path.
  auto plan = engine.decodePlan(a);
  REQUIRE_OK(plan);
  for (int kv_stages : {2, 3}) {
    DecodeArgs r = a;
    r.spec = plan->spec;
    r.spec->paged.kv_stages = kv_stages;
    REQUIRE_SUCCESS(engine.decode(r));
    CHECK(dev.outO(prob.q.size()) == one);
  }
  // Rows past the sequences' lengths holding random bytes instead of 0xFF change no bit (both V
  // formats: a masked key's P of 0 never meets a non-finite V).
  for (KvValueFormat value : {KvValueFormat::Fp8, KvValueFormat::Mxfp4}) {
    INFO(toString(value) << " V");
    const PagedProblem same({3000, 1500}, 2, 4, 2, 128, 32, 1.0f, seed, 1, value);
    DeviceProblem poisoned(same), random(same, seed + 1);
    std::vector<float> outs[2];
    for (int i = 0; i < 2; ++i) {
      DeviceProblem &d = i == 0 ? poisoned : random;
      REQUIRE_SUCCESS(engine.appendKv(d.append(same.tokens())));
      DecodeArgs b = d.decode(same);
      b.splits = 3;
      REQUIRE_SUCCESS(engine.decode(b));
      outs[i] = d.outO(same.q.size());
    }
    CHECK(outs[0] == outs[1]);
    std::size_t finite = 0;
    for (float x : outs[1])
      finite += std::isfinite(x);
    CHECK(finite == outs[1].size());
  }
  for (int splits : {2, 7, 16}) {
    a.splits = splits;
    REQUIRE_SUCCESS(engine.decode(a));
    CHECK(offByMoreThanOneUlp(dev.outO(prob.q.size()), one, 128) == 0);
  }

  const runtime::DriverApi &api = engine.driver().api();
  auto stream = runtime::Stream::create(engine.driver());
  REQUIRE_OK(stream);
  CUstream cs = static_cast<CUstream>(stream->handle());
  AppendKvArgs app = dev.append(prob.tokens());
  app.stream = stream->handle();
  a.splits = 0;
  a.stream = stream->handle();
  auto bytes = engine.decodeWorkspaceSize(a);
  REQUIRE_OK(bytes);
  CHECK(*bytes > 0); // (two sequences of 2 kv heads: the heuristic splits)
  auto ws = runtime::DeviceBuffer::allocate(engine.driver(), *bytes);
  REQUIRE_OK(ws);
  REQUIRE_SUCCESS(engine.decode(a, ws->address(), ws->size()));
  REQUIRE_SUCCESS(stream->synchronize());
  const std::vector<float> eager = dev.outO(prob.q.size());
  CUgraph graph = nullptr;
  REQUIRE(api.cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  llvm::Error appended = engine.appendKv(app);
  llvm::Error decoded = engine.decode(a, ws->address(), ws->size());
  const CUresult ended = api.cuStreamEndCapture(cs, &graph);
  REQUIRE_SUCCESS(std::move(appended));
  REQUIRE_SUCCESS(std::move(decoded));
  REQUIRE(ended == CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  REQUIRE(api.cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  const std::vector<std::uint8_t> poison(prob.q.size() * 2, 0xFF);
  REQUIRE_SUCCESS(dev.o.copyFromHost(poison.data(), poison.size()));
  REQUIRE(api.cuGraphLaunch(exec, cs) == CUDA_SUCCESS);
  REQUIRE_SUCCESS(stream->synchronize());
  CHECK(dev.outO(prob.q.size()) == eager);
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
}

TEST_CASE("decode edges: no token, a bad page, a length past the block table, a NaN row", "[gpu][paged]") {
  for (KvValueFormat value : {KvValueFormat::Fp8, KvValueFormat::Mxfp4}) {
  INFO(toString(value) << " V");
  PagedProblem prob({0, 40, 50, 60}, 1, 2, 2, 64, 16, 1.0f, 31u, 1, value);
  // sequence 2's second page points past the cache, sequence 3's length exceeds its block table
  prob.decode.block_table[2 * prob.decode.block_table_stride + 1] = prob.cache.pages + 5;
  prob.decode.seq_lens[3] = prob.decode.block_table_stride * 16 + 3;
  // sequence 1's last token: NaN in its K row
  const std::int64_t nan_token = 39;
  prob.k_new[nan_token * 64 + 10] = std::numeric_limits<float>::quiet_NaN();
  DeviceProblem dev(prob);
  REQUIRE_SUCCESS(gpuEngine().appendKv(dev.append(prob.tokens())));
  DecodeArgs a = dev.decode(prob);
  for (int kv_stages : {0, 3})
  for (int splits : {1, 4}) {
    INFO(splits << " splits, kv_stages " << kv_stages);
    a.splits = splits;
    a.spec = defaultPagedKvSpec(64, 16, 4, gpuEngine().target(), value);
    a.spec->paged.kv_stages = kv_stages;
    REQUIRE_SUCCESS(gpuEngine().decode(a));
    const std::vector<float> o = dev.outO(prob.q.size());
    const std::vector<float> lse = download<float>(dev.lse, prob.q.size() / 64);
    const auto row = [](int b, int h, int i) { return (b * 2 + h) * 2 + i; };
    for (int h = 0; h < 2; ++h) {
      CHECK(lse[row(0, h, 0)] == -std::numeric_limits<float>::infinity()); // no token
      CHECK(o[row(0, h, 1) * 64] == 0.0f);
      CHECK(std::isfinite(lse[row(1, h, 0)])); // query 0 of sequence 1 does not see token 39
      CHECK(std::isnan(lse[row(1, h, 1)]));
      CHECK(std::isnan(o[row(1, h, 1) * 64]));
      for (int i = 0; i < 2; ++i) {
        CHECK(std::isnan(lse[row(2, h, i)]));
        CHECK(std::isnan(o[row(3, h, i) * 64 + 5]));
      }
    }
  }
  }
}

TEST_CASE("bad paged calls are errors that name what is wrong", "[gpu][paged]") {
  const PagedProblem prob({40}, 2, 2, 1, 128, 16, 1.0f, 37u);
  DeviceProblem dev(prob);
  const DecodeArgs good = dev.decode(prob);
  REQUIRE(decodeError(good).empty());
  std::vector<std::uint16_t> host_q(prob.q.size());
  DecodeArgs a = good;
  a.q.data = reinterpret_cast<std::uint64_t>(host_q.data()) / 16 * 16 + 16;
  CHECK_THAT(decodeError(a), Catch::Contains("decode q"));
  a = good;
  a.splits = 17;
  CHECK_THAT(decodeError(a), Catch::Contains("splits 17"));
  a = good;
  a.block_table = 0;
  CHECK_THAT(decodeError(a), Catch::Contains("block_table: null"));
  a = good;
  a.cache.page_size = 24;
  CHECK_THAT(decodeError(a), Catch::Contains("page_size 24"));
  a = good;
  a.q.shape[1] = 3, a.o.shape[1] = 3;
  CHECK_THAT(decodeError(a), Catch::Contains("multiple"));
  a = good;
  a.cache.pages = 1 << 20; // more pages than the allocation holds
  CHECK_THAT(decodeError(a), Catch::Contains("paged cache"));
  a = good;
  a.spec = defaultPagedKvSpec(128, 32, 4, gpuEngine().target());
  CHECK_THAT(decodeError(a), Catch::Contains("page size 32"));
  AppendKvArgs app = dev.append(prob.tokens());
  app.slot_mapping = 0;
  llvm::Error e = gpuEngine().appendKv(app);
  REQUIRE(static_cast<bool>(e));
  CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("slot_mapping"));
}

TEST_CASE("the checking mode reports a bad length, page or slot as an error instead of NaN rows", "[gpu][paged]") {
  PagedProblem prob({40, 50}, 1, 2, 1, 64, 16, 1.0f, 43u);
  prob.decode.block_table[prob.decode.block_table_stride + 2] = prob.cache.pages + 1; // sequence 1, block 2
  DeviceProblem dev(prob);
  EngineOptions options;
  options.nonfinite = runtime::NonFinitePolicy::Check;
  auto checking = Engine::create(options);
  REQUIRE_OK(checking);
  REQUIRE_SUCCESS((*checking)->appendKv(dev.append(prob.tokens())));
  llvm::Error e = (*checking)->decode(dev.decode(prob));
  REQUIRE(static_cast<bool>(e));
  CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("block_table[1][2]"));
  // the default engine makes sequence 1's rows NaN instead, and sequence 0's stay finite
  REQUIRE_SUCCESS(gpuEngine().decode(dev.decode(prob)));
  const std::vector<float> o = dev.outO(prob.q.size());
  CHECK(std::isfinite(o[0]));
  CHECK(std::isnan(o[2 * 64]));
  const std::vector<std::int64_t> bad_slot = {std::int64_t(prob.cache.pages) * 16};
  REQUIRE_SUCCESS(dev.slots.copyFromHost(bad_slot.data(), 8));
  e = (*checking)->appendKv(dev.append(1));
  REQUIRE(static_cast<bool>(e));
  CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("slot_mapping[0]"));
}

TEST_CASE("a tuned decode plan is the one decodePlan returns, and it decodes like the heuristic's",
          "[gpu][paged][tuning]") {
  auto config = runtime::loadConfig();
  REQUIRE_OK(config);
  config->cache.disable_disk = true; // (the records stay in this engine's memory)
  EngineOptions options;
  options.config = *config;
  auto created = Engine::create(options);
  REQUIRE_OK(created);
  Engine &engine = **created;
  runtime::DecodeTuneRequest req;
  req.target = engine.target();
  req.sm_count = engine.device().sm_count;
  req.problem = {2, 32, 8, 1, 4096};
  runtime::JitCandidateCompiler compiler(engine.jit());
  runtime::EngineDecodeTimingSource timing(engine, {1, 3});
  runtime::DecodeTuner tuner(engine.tuningDb(), compiler, timing);
  auto tuned = tuner.tune(req);
  REQUIRE_OK(tuned);
  for (const cache::CandidateResult &c : tuned->record.candidates) {
    INFO(c.label << ": " << c.error);
    CHECK(c.ok);
    CHECK(c.median_ms > 0);
  }
  const cache::CandidateResult &winner = tuned->record.winnerResult();

  runtime::DecodeFixtureShape shape;
  shape.batch = 2, shape.context = 4096;
  auto fixture = runtime::DecodeFixture::create(engine, shape, freshSeed(), 0);
  REQUIRE_OK(fixture);
  DecodeArgs a = (*fixture)->args(0);
  auto plan = engine.decodePlan(a);
  REQUIRE_OK(plan);
  CHECK(plan->from_tuning);
  CHECK(plan->splits == winner.splits);
  CHECK(plan->spec.paged.warps == winner.spec.paged.warps);
  const std::size_t n = std::size_t(2) * 32 * 128;
  REQUIRE_SUCCESS(engine.decode(a));
  const CUdeviceptr o_bytes = a.o.data; // (copies on the legacy stream wait for the decode)
  std::vector<std::uint16_t> tuned_bits(n), heuristic_bits(n);
  const runtime::DriverApi &api = engine.driver().api();
  REQUIRE(api.cuMemcpyDtoH(tuned_bits.data(), o_bytes, n * 2) == CUDA_SUCCESS);
  const DecodeGridChoice h = chooseDecodeGrid(runtime::decodeBaseCtas(2, 32, 8, 1), 4096, engine.device().sm_count);
  a.splits = h.splits;
  a.spec = defaultPagedKvSpec(128, 16, h.warps, engine.target());
  REQUIRE_SUCCESS(engine.decode(a));
  REQUIRE(api.cuMemcpyDtoH(heuristic_bits.data(), o_bytes, n * 2) == CUDA_SUCCESS);
  std::vector<float> t(n), hh(n);
  for (std::size_t i = 0; i < n; ++i)
    t[i] = formats::bf16ToFloat(tuned_bits[i]), hh[i] = formats::bf16ToFloat(heuristic_bits[i]);
  CHECK(offByMoreThanOneUlp(t, hh, 128) == 0);
}
