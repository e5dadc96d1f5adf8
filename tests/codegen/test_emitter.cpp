// The emitter: golden structure (FileCheck), purity, and that every baked constant reaches the source.
#include "fa4jit/codegen/baked_dims.h"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

namespace {
// The fused widening's shared memory: mbarriers, slots and shape, then three 6 KiB staging areas
// (templates/fa4jit/attention_sm90/layout.cuh's kWidenerSharedBytes).
constexpr int kWidener = 128 + 3 * 6144;
} // namespace

using namespace fa4jit;


namespace {

std::string emit(const KernelSpec &s) {
  llvm::Expected<EmittedKernel> k = emitKernel(s);
  if (!k) {
    FAIL(llvm::toString(k.takeError()));
    return "";
  }
  return k->source;
}

// Runs FileCheck with tests/codegen/golden/<check> over `text`; true when it passes. `quiet`
// silences the diagnostics of a mismatch the test expects.
bool fileCheck(const std::string &text, const std::string &check, bool quiet = false) {
  llvm::SmallString<128> path;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("fa4jit-emit", "cu", path));
  {
    std::ofstream out(path.c_str());
    out << text;
  }
  const std::string cmd = std::string(FA4JIT_FILECHECK) + " " + FA4JIT_SOURCE_DIR + "/tests/codegen/golden/" + check +
                          " --input-file " + path.str().str() + (quiet ? " 2>/dev/null" : "");
  const int rc = std::system(cmd.c_str());
  llvm::sys::fs::remove(path);
  return rc == 0;
}

KernelSpec affineDirectP() {
  // sm_89: the mma.sync template is the only attention schedule there.
  KernelSpec s = defaultAttentionSpec(Route::DirectP, 128, true, Target::Sm89);
  s.attention.classifier.kind = ClassifierKind::Affine;
  s.attention.classifier.alpha = 2.0f;
  s.attention.classifier.beta = 0.75f;
  return s;
}

} // namespace

TEST_CASE("quantizer source matches the golden structure", "[codegen][emitter]") {
  REQUIRE(std::string(FA4JIT_FILECHECK).size() > 0);
  CHECK(fileCheck(emit(defaultQuantizeSpec(QuantFormat::Nvfp4, 128, Target::Sm90a)), "quantize_nvfp4_d128.check"));
  KernelSpec m = defaultQuantizeSpec(QuantFormat::Mxfp4, 64, Target::Sm100a, true, true);
  m.quantize.threads = 128;
  CHECK(fileCheck(emit(m), "quantize_mxfp4_vt_permuted.check"));
  // A golden file that does not match must fail (the harness can fail).
  CHECK(!fileCheck(emit(m), "quantize_nvfp4_d128.check", /*quiet=*/true));
}

TEST_CASE("quantizers have the one-pass cluster kernel where the target has clusters and the format needs it, "
          "and the pipelined one pass for rows",
          "[codegen][emitter]") {
  const auto suffixes = [](const KernelSpec &s) {
    llvm::Expected<EmittedKernel> k = emitKernel(s);
    REQUIRE(static_cast<bool>(k));
    std::vector<std::string> out;
    for (const EntryPoint &e : k->entries)
      out.push_back(e.name.substr(k->name.size()));
    return out;
  };
  const std::vector<std::string> two = {"_amax", "_encode"};
  const std::vector<std::string> cluster = {"_amax", "_encode", kQuantizeClusterSuffix};
  const std::vector<std::string> rows = {"_amax", "_encode", kQuantizeClusterSuffix, kQuantizePipelinedSuffix};
  for (Target t : {Target::Sm90a, Target::Sm100a}) {
    CHECK(suffixes(defaultQuantizeSpec(QuantFormat::Nvfp4, 128, t)) == rows);
    CHECK(suffixes(defaultQuantizeSpec(QuantFormat::E4m3Rows, 64, t)) == rows);
    CHECK(suffixes(defaultQuantizeSpec(QuantFormat::Fp8PerHead, 256, t, QuantInput::F16)) == cluster);
    // MXFP4 V^T's codes depend on each block alone: one pass without a cluster.
    CHECK(suffixes(defaultQuantizeSpec(QuantFormat::Mxfp4, 128, t)) == two);
  }
  // No clusters before sm_90; the pipelined pass needs none.
  for (Target t : {Target::Sm80, Target::Sm89}) {
    CHECK(suffixes(defaultQuantizeSpec(QuantFormat::Nvfp4, 128, t)) == std::vector<std::string>{
                                                                           "_amax", "_encode", kQuantizePipelinedSuffix});
    CHECK(suffixes(defaultQuantizeSpec(QuantFormat::Fp8PerHead, 128, t)) == two);
  }
  // A row group that splits a word of the non-finite row mask has no pipelined pass (64 threads at
  // D 256: 16 rows).
  KernelSpec narrow = defaultQuantizeSpec(QuantFormat::Nvfp4, 256, Target::Sm90a);
  narrow.quantize.threads = 64;
  CHECK(suffixes(narrow) == cluster);
}

TEST_CASE("attention source matches the golden structure", "[codegen][emitter]") {
  if (!attentionTemplatesAvailable()) {
    llvm::Expected<EmittedKernel> k = emitKernel(affineDirectP());
    REQUIRE(!k);
    CHECK_THAT(llvm::toString(k.takeError()), Catch::Contains("attention templates not available"));
    return;
  }
  CHECK(fileCheck(emit(affineDirectP()), "attention_directp_affine.check"));
}

TEST_CASE("emission is pure and sensitive to every baked value", "[codegen][emitter]") {
  const KernelSpec q = defaultQuantizeSpec(QuantFormat::Fp8PerHead, 256, Target::Sm90a);
  CHECK(emit(q) == emit(q));
  KernelSpec q2 = q;
  q2.quantize.keys_permuted16 = true;
  CHECK(emit(q) != emit(q2));
  if (!attentionTemplatesAvailable())
    return;
  const KernelSpec a = affineDirectP();
  const std::string src = emit(a);
  CHECK(src == emit(a));
  KernelSpec b = a;
  b.attention.classifier.beta = std::nextafter(0.75f, 1.0f); // one ulp
  const std::string src_b = emit(b);
  CHECK(src_b != src);
  CHECK(src_b.find(cppFloatLiteral(std::nextafter(0.75f, 1.0f))) != std::string::npos);
  KernelSpec c = a;
  c.attention.softmax_scale = 0.1f;
  CHECK(emit(c) != src);
}

TEST_CASE("every baked constant is a config member; run-time dims are not", "[codegen][emitter]") {
  std::vector<KernelSpec> specs = {defaultQuantizeSpec(QuantFormat::Nvfp4, 64, Target::Sm89, true)};
  if (attentionTemplatesAvailable())
    specs.push_back(affineDirectP());
  for (const KernelSpec &s : specs) {
    llvm::Expected<DimensionSplit> split = splitDimensions(s);
    REQUIRE_OK(split);
    const std::string src = emit(s);
    for (const BakedConstant &c : split->baked)
      CHECK(src.find("static constexpr " + c.type + " " + c.name + " = " + c.value + ";") != std::string::npos);
    for (const char *runtime : {"seqlen", "batch", "heads", "row_stride"}) {
      for (const BakedConstant &c : split->baked)
        CHECK(c.name.find(runtime) == std::string::npos);
      bool listed = false;
      for (const RuntimeArgument &r : split->runtime)
        listed |= r.name.find(runtime) != std::string::npos;
      CHECK(listed);
    }
    CHECK(src.find(toJson(s, 2).substr(0, 20)) == std::string::npos); // JSON only inside comments
  }
}

TEST_CASE("entry points and launch facts", "[codegen][emitter]") {
  llvm::Expected<EmittedKernel> q = emitKernel(defaultQuantizeSpec(QuantFormat::Mxfp4, 128, Target::Sm90a));
  REQUIRE_OK(q);
  REQUIRE(q->entries.size() == 2);
  CHECK(q->entries[0].name == q->name + "_amax");
  CHECK(q->entries[1].name == q->name + "_encode");
  CHECK(q->entries[1].threads == 256);
  CHECK(q->source.find("void __launch_bounds__(256)\n" + q->entries[1].name + "(") != std::string::npos);
  if (!attentionTemplatesAvailable())
    return;
  const KernelSpec s = defaultAttentionSpec(Route::Nvfp8, 256, false, Target::Sm89);
  llvm::Expected<EmittedKernel> a = emitKernel(s);
  REQUIRE_OK(a);
  REQUIRE(a->entries.size() == 2);
  CHECK(a->entries[0].name == kernelName(s));
  CHECK(a->entries[0].threads == s.attention.tile.shape.warps * 32);
  CHECK(a->entries[0].dynamic_shared_bytes == attentionSharedBytes(s.attention));
  // A quantized kernel's second entry makes NaN the rows a non-finite input reaches; the bf16
  // route has none (its arithmetic propagates them).
  CHECK(a->entries[1].name == kernelName(s) + "_nonfinite_rows");
  CHECK(a->entries[1].dynamic_shared_bytes == 0);
  CHECK(a->source.find("propagateNonFiniteRows<fa4jit::device::attention::GeneratedConfig::causal") !=
        std::string::npos);
  llvm::Expected<EmittedKernel> b = emitKernel(defaultAttentionSpec(Route::Bf16, 128, true, Target::Sm90a));
  REQUIRE_OK(b);
  CHECK(b->entries.size() == 1);
  CHECK(b->source.find("_nonfinite_rows") == std::string::npos);
}

TEST_CASE("the persistent wgmma kernel's widening passes, or none with fused widening", "[codegen][emitter]") {
  if (!attentionTemplatesAvailable())
    return;
  for (Route r : {Route::Nvfp8, Route::DirectP})
    for (bool causal : {false, true}) {
      INFO(toString(r) << " causal " << causal);
      KernelSpec s = defaultAttentionSpecForKeys(r, 128, causal, Target::Sm90a, 4096); // (persistent either way)
      REQUIRE(s.attention.tile.schedule.persistent);
      s.attention.tile.staging.fused_widening = true;
      REQUIRE(canonicalize(s).attention.tile.staging.fused_widening);
      llvm::Expected<EmittedKernel> fused = emitKernel(s);
      REQUIRE_OK(fused);
      REQUIRE(fused->entries.size() == 2); // the attention entry writes the images itself
      CHECK(fused->entries[1].name == fused->name + "_nonfinite_rows");
      CHECK(fused->source.find("fused_widening = true") != std::string::npos);
      CHECK(fused->source.find("_widen_kv") == std::string::npos);
      s.attention.tile.staging.fused_widening = false;
      llvm::Expected<EmittedKernel> passes = emitKernel(s);
      REQUIRE_OK(passes);
      REQUIRE(passes->entries.size() == 4);
      CHECK(passes->entries[1].name == passes->name + "_widen_kv");
      CHECK(passes->entries[2].name == passes->name + "_widen_q");
      // the spare producer warps' slots, mbarriers, shape and staging areas
      CHECK(fused->entries[0].dynamic_shared_bytes == passes->entries[0].dynamic_shared_bytes + kWidener);
      CHECK(fused->name != passes->name);
    }
}

TEST_CASE("invalid and unsupported specs are errors naming the field", "[codegen][emitter]") {
  KernelSpec q = defaultQuantizeSpec(QuantFormat::Nvfp4, 100, Target::Sm90a);
  llvm::Expected<EmittedKernel> k = emitKernel(q);
  REQUIRE(!k);
  CHECK_THAT(llvm::toString(k.takeError()), Catch::Contains("quantize.head_dim"));
  if (!attentionTemplatesAvailable())
    return;
  KernelSpec a = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm89);
  a.attention.tile.shape.block_m = 128; // valid hardware tile, but the mma.sync template wants 16 * warps
  llvm::Expected<EmittedKernel> e = emitKernel(a);
  REQUIRE(!e);
  CHECK_THAT(llvm::toString(e.takeError()), Catch::Contains("attention.tile.shape.block_m") && Catch::Contains("16 * warps"));
}

TEST_CASE("folded constants follow NUMERICS.md", "[codegen][emitter]") {
  CHECK(cppFloatLiteral(2.0f) == "0x1p+1f");
  CHECK(cppFloatLiteral(0.0f) == "0x0p+0f");
  CHECK(cppFloatLiteral(-0.75f) == "-0x1.8p-1f");
  AttentionSpec a = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a).attention;
  // kscale = FP32(1/sqrt(128) * log2(e)) = 0x1.0527dcp-3; E4M3 widening by 2^-7 on Q and K (the
  // sm_90a directp default, FP16 scores): * 4^7; by 2^-3 (FP32 scores): * 64.
  CHECK(log2SoftmaxScale(a) == 0x1.0527dcp-3f);
  REQUIRE(a.operands.qk_widen_shift == 7);
  CHECK(foldedScoreScale(a) == 0x1.0527dcp+11f);
  a.operands.qk_widen_shift = 3;
  CHECK(foldedScoreScale(a) == 0x1.0527dcp+3f);
  a.operands.qk_widening = Widening::Bf16;
  CHECK(foldedScoreScale(a) == 0x1.0527dcp-3f);
  AttentionSpec b = defaultAttentionSpec(Route::Bf16, 64, false, Target::Sm90a).attention;
  CHECK(foldedScoreScale(b) == static_cast<float>(0.125 * M_LOG2E));
  b.softmax_scale = 0.5f;
  CHECK(foldedScoreScale(b) == static_cast<float>(0.5 * M_LOG2E));
}
