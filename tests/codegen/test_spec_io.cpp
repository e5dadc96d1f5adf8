// Canonical spec JSON: round trips, canonical form, known hash, field-naming parse errors.
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/variants.h"
#include "fa4jit/codegen/spec_io.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

using namespace fa4jit;


namespace {

std::string parseError(const std::string &json) {
  llvm::Expected<KernelSpec> s = parseSpec(json);
  if (s)
    return "";
  return llvm::toString(s.takeError());
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

KernelSpec oddDirectP() {
  KernelSpec s = defaultAttentionSpec(Route::DirectP, 128, true, Target::Sm100a);
  s.attention.classifier.kind = ClassifierKind::Mixed;
  s.attention.classifier.alpha = 0.1f;                         // not a short binary fraction
  s.attention.classifier.beta = std::nextafter(0.5f, 1.0f);     // needs all 9 digits
  s.attention.classifier.y_split = -0.0f;                       // sign of zero must survive
  s.attention.softmax_scale = 1.0f / 3.0f;
  s.attention.guard.slack_log2 = 1e-30f;
  s.attention.tmem = {256, {0, 128}, {128, 192}, 224};
  return s;
}

} // namespace

TEST_CASE("every variant and an odd spec survive JSON round trips", "[codegen][spec_io]") {
  std::vector<KernelSpec> specs = enumerateVariants();
  specs.push_back(oddDirectP());
  REQUIRE(specs.size() > 100);
  for (const KernelSpec &s : specs) {
    const std::string json = toJson(s);
    llvm::Expected<KernelSpec> back = parseSpec(json);
    REQUIRE_OK(back);
    CHECK(specsEqual(*back, canonicalize(s)));
    CHECK(toJson(*back) == json);
    CHECK(toJson(*back, 2) == toJson(s, 2));
  }
}

TEST_CASE("the odd spec keeps its exact floats", "[codegen][spec_io]") {
  const KernelSpec s = oddDirectP();
  llvm::Expected<KernelSpec> back = parseSpec(toJson(s, 4));
  REQUIRE_OK(back);
  CHECK(bits(back->attention.classifier.beta) == bits(std::nextafter(0.5f, 1.0f)));
  CHECK(bits(back->attention.classifier.y_split) == bits(-0.0f));
  CHECK(bits(back->attention.softmax_scale) == bits(1.0f / 3.0f));
  CHECK(back->attention.tmem.sf_col == 224);
  CHECK(back->attention.tmem.o_col[1] == 192);
}

TEST_CASE("formatFloat is shortest-first and round-trips any float", "[codegen][spec_io]") {
  CHECK(formatFloat(2.0f) == "2");
  CHECK(formatFloat(0.5f) == "0.5");
  CHECK(formatFloat(-0.0f) == "-0.0");
  CHECK(formatFloat(0.1f) == "0.1");
  CHECK(formatFloat(INFINITY) == "inf");
  CHECK(formatFloat(std::nanf("")) == "nan");
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, sizeof f);
    if (!std::isfinite(f))
      continue;
    const std::string text = formatFloat(f);
    INFO(text);
    REQUIRE(bits(static_cast<float>(std::strtod(text.c_str(), nullptr))) == u);
    REQUIRE(text.size() <= 16);
  }
}

TEST_CASE("canonical form ignores what cannot change the kernel", "[codegen][spec_io]") {
  KernelSpec a = defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm90a);
  KernelSpec b = a;
  b.attention.classifier.alpha = 3.0f;           // bf16 route has no classifier
  b.attention.operands.p_offset_log2 = 4;        // nor FP8 operands
  b.attention.tmem.columns_allocated = 512;      // nor TMEM on sm_90a
  CHECK(specHash(a) == specHash(b));
  CHECK(toJson(a).find("classifier") == std::string::npos);

  KernelSpec t = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  t.attention.classifier.kind = ClassifierKind::Threshold;
  KernelSpec t2 = t;
  t2.attention.classifier.alpha = 3.0f; // threshold classifier reads only the thresholds
  t2.attention.classifier.pieces[0] = 0.125f;
  CHECK(specHash(t) == specHash(t2));
  t2.attention.classifier.thresholds[3] = 0.796875f; // 102/128, on the grid
  CHECK(specHash(t) != specHash(t2));

  KernelSpec pw = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  REQUIRE(pw.attention.classifier.kind == ClassifierKind::Piecewise);
  KernelSpec pw2 = pw;
  pw2.attention.classifier.thresholds[3] = 0.796875f; // the piecewise classifier reads only its pieces
  pw2.attention.classifier.alpha = 3.0f;
  CHECK(specHash(pw) == specHash(pw2));
  pw2.attention.classifier.pieces[3] = 0.265625f;
  CHECK(specHash(pw) != specHash(pw2));
  llvm::Expected<KernelSpec> pw_back = parseSpec(toJson(pw2));
  REQUIRE_OK(pw_back);
  CHECK(specsEqual(*pw_back, canonicalize(pw2)));
  CHECK(toJson(t).find("pieces") == std::string::npos); // other kinds' text is what it was

  KernelSpec f = t;
  f.attention.classifier.kind = ClassifierKind::Affine;
  KernelSpec f2 = f;
  f2.attention.classifier.beta = std::nextafter(0.0f, 1.0f);
  CHECK(specHash(f) != specHash(f2));
  CHECK(specHash(f) != specHash(t));
}

TEST_CASE("hash and kernel name have known values", "[codegen][spec_io]") {
  // Changing these means every cached kernel name changes: do it only with the schema version.
  const KernelSpec q = defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a);
  CHECK(toJson(q) == R"({"family":"quantize","quantize":{"format":"nvfp4","head_dim":128,"input_fp32":false,)"
                     R"("keys_permuted16":false,"layout":"row-major-k","threads":256},"schema":1,"target":"sm_90a"})");
  CHECK(specHash(q) == "0493ad87c9a4c1746c59b15e6edf9ddde7e99e72c9929b24718e594e1c8c973e");
  CHECK(kernelName(q) == "fa4jit_quant_nvfp4_d128_0493ad87");
  const KernelSpec a = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  const std::string name = kernelName(a);
  CHECK(name.rfind("fa4jit_attn_directp_d128_c0_", 0) == 0);
  CHECK(name.size() == std::string("fa4jit_attn_directp_d128_c0_").size() + 8);
  CHECK(name.substr(name.size() - 8) == specHash(a).substr(0, 8));
  CHECK(specHash(a).size() == 64);
  CHECK(specHash(a).find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("an FP16-input quantizer names its input; the others' JSON does not mention it", "[codegen][spec_io]") {
  const KernelSpec h = defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a, QuantInput::F16);
  CHECK(h.quantize.input_fp16);
  CHECK_FALSE(h.quantize.input_fp32);
  CHECK(toJson(h).find(R"("input_fp16":true)") != std::string::npos);
  auto back = parseSpec(toJson(h));
  REQUIRE(bool(back));
  CHECK(specsEqual(*back, h));
  CHECK(toJson(*back) == toJson(h));
  const KernelSpec b = defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a);
  CHECK(toJson(b).find("input_fp16") == std::string::npos);
  CHECK_FALSE(specsEqual(b, h));
  CHECK(specHash(b) != specHash(h));
  CHECK(defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a, QuantInput::F32).quantize.input_fp32);
}

TEST_CASE("parse errors name the field", "[codegen][spec_io]") {
  CHECK_THAT(parseError("{"), Catch::Contains("not valid JSON"));
  CHECK_THAT(parseError("[1]"), Catch::Contains("JSON object"));
  CHECK_THAT(parseError(R"({"family":"attention","attention":{"tile":{"blockm":64}}})"),
             Catch::Contains("attention.tile.blockm") && Catch::Contains("unknown key"));
  CHECK_THAT(parseError(R"({"family":"attention","attention":{"head_dim":"128"}})"),
             Catch::Contains("attention.head_dim") && Catch::Contains("integer"));
  CHECK_THAT(parseError(R"({"attention":{"route":"fp4"}})"),
             Catch::Contains("attention.route") && Catch::Contains("directp"));
  CHECK_THAT(parseError(R"({"attention":{"classifier":{"thresholds":[1,2,3]}}})"),
             Catch::Contains("attention.classifier.thresholds"));
  CHECK_THAT(parseError(R"({"attention":{"classifier":{"alpha":true}}})"),
             Catch::Contains("attention.classifier.alpha"));
  CHECK_THAT(parseError(R"({"schema":2})"), Catch::Contains("schema"));
  CHECK_THAT(parseError(R"({"family":"quantize","attention":{}})"), Catch::Contains("'attention'"));
  CHECK_THAT(parseError(R"({"family":"quantize","quantize":{"format":"int4"}})"),
             Catch::Contains("quantize.format") && Catch::Contains("mxfp4"));
  CHECK_THAT(parseError(R"({"target":"sm_90"})"), Catch::Contains("target") && Catch::Contains("sm_90a"));
  CHECK_THAT(parseError(R"({"extra":1})"), Catch::Contains("'extra'"));
  // Missing keys keep the defaults.
  llvm::Expected<KernelSpec> minimal = parseSpec(R"({"attention":{"head_dim":64}})");
  REQUIRE_OK(minimal);
  CHECK(minimal->attention.head_dim == 64);
  CHECK(minimal->attention.route == AttentionSpec{}.route);
}

TEST_CASE("enum names parse back", "[codegen][spec_io]") {
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a}) {
    llvm::Expected<Target> back = parseTarget(toString(t));
    REQUIRE_OK(back);
    CHECK(*back == t);
  }
  llvm::Expected<QuantFormat> f = parseQuantFormat("fp8");
  REQUIRE_OK(f);
  CHECK(*f == QuantFormat::Fp8PerHead);
  llvm::Expected<Route> bad = parseRoute("DirectP");
  REQUIRE(!bad);
  CHECK_THAT(llvm::toString(bad.takeError()), Catch::Contains("bf16, nvfp8, directp"));
}

TEST_CASE("every TMEM plan column is part of the spec's identity", "[codegen][spec_io]") {
  // The JIT's in-process memo and the cache key both start from the canonical JSON, so a plan that
  // differs only in, say, where P aliases S must not read as the same spec.
  const KernelSpec base = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm100a);
  REQUIRE(base.attention.tmem.columns_allocated > 0);
  auto parsed = parseSpec(toJson(base));
  REQUIRE_OK(parsed);
  CHECK(specsEqual(*parsed, base));
  CHECK(parsed->attention.tmem.p_col[0] == base.attention.tmem.p_col[0]);
  CHECK(parsed->attention.tmem.sfv_col[1] == base.attention.tmem.sfv_col[1]);
  auto mutated = [&](auto &&edit) {
    KernelSpec s = base;
    edit(s.attention.tmem);
    return s;
  };
  const KernelSpec variants[] = {
      mutated([](TmemPlanRef &t) { t.p_col[1] += 4; }),   mutated([](TmemPlanRef &t) { t.s_spare_col = 7; }),
      mutated([](TmemPlanRef &t) { t.sfq_col[0] += 4; }), mutated([](TmemPlanRef &t) { t.sfk_col[1] += 4; }),
      mutated([](TmemPlanRef &t) { t.sfp_col[0] += 4; }), mutated([](TmemPlanRef &t) { t.sfv_col[0] += 4; }),
  };
  for (const KernelSpec &v : variants) {
    CHECK_FALSE(specsEqual(v, base));
    CHECK(toJson(v) != toJson(base));
    CHECK(specHash(v) != specHash(base));
  }
}

TEST_CASE("the wgmma schedule's choices are part of the spec's identity", "[codegen][spec_io]") {
  const KernelSpec w = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a);
  REQUIRE(w.attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized);
  auto changed = [&](auto edit) {
    KernelSpec v = w;
    edit(v.attention.tile);
    llvm::Expected<KernelSpec> back = parseSpec(toJson(v));
    REQUIRE_OK(back);
    CHECK(specsEqual(*back, canonicalize(v))); // (fused widening is cleared where nothing is fused)
    return specHash(v) != specHash(w);
  };
  CHECK(changed([](TileSpec &t) { t.pipeline.overlap = !t.pipeline.overlap; }));
  CHECK(changed([](TileSpec &t) { t.pipeline.pingpong = !t.pipeline.pingpong; }));
  CHECK(changed([](TileSpec &t) { t.staging.kv = KvStaging::InKernel; }));
  CHECK(changed([](TileSpec &t) { t.bench_ablation = StageAblation::SoftmaxTwice; }));
  REQUIRE(w.attention.tile.schedule.persistent);
  CHECK(changed([](TileSpec &t) { t.schedule.persistent = false; }));
  CHECK(toJson(w).find("\"persistent\":true") != std::string::npos);
  CHECK(toJson(w).find("kv_multicast") == std::string::npos); // absent means false
  CHECK(changed([](TileSpec &t) { t.schedule.kv_multicast = true; }));
  KernelSpec mc = w;
  mc.attention.tile.schedule.kv_multicast = true;
  CHECK(toJson(mc).find("\"kv_multicast\":true") != std::string::npos);
  REQUIRE(w.attention.tile.staging.fused_widening);
  CHECK(toJson(w).find("\"fused_widening\":true") != std::string::npos);
  CHECK(changed([](TileSpec &t) { t.staging.fused_widening = false; }));
  CHECK(toJson(mc).find("fused_widening") == std::string::npos); // (clusters: nothing fused)
  // The mma.sync template has none of these choices: the canonical form drops them.
  KernelSpec m = withAttentionSchedule(w, AttentionSchedule::MmaSync);
  KernelSpec m2 = m;
  m2.attention.tile.pipeline.overlap = true;
  m2.attention.tile.pipeline.pingpong = true;
  m2.attention.tile.staging.kv = KvStaging::Prewidened;
  m2.attention.tile.schedule.persistent = true;
  m2.attention.tile.schedule.kv_multicast = true;
  CHECK(specHash(m) == specHash(m2));
  CHECK(toJson(m).find("kv_staging") == std::string::npos);
  for (StageAblation a : {StageAblation::None, StageAblation::SkipLoads, StageAblation::SkipQk,
                          StageAblation::SkipSoftmax, StageAblation::SkipPv, StageAblation::SoftmaxTwice}) {
    llvm::Expected<StageAblation> back = parseStageAblation(toString(a));
    REQUIRE_OK(back);
    CHECK(*back == a);
  }
  for (KvStaging k : {KvStaging::InKernel, KvStaging::Prewidened, KvStaging::TensorMap}) {
    llvm::Expected<KvStaging> back = parseKvStaging(toString(k));
    REQUIRE_OK(back);
    CHECK(*back == k);
  }
}
