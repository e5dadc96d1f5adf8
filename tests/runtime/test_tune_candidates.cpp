// The autotuner's candidates and resource model (codegen/candidates.h, resource_model.h): the
// heuristic first, a deterministic order, every kept candidate valid and emittable, impossible
// ones pruned with the resource named, fitted classifier coefficients.
#include "expected_checks.h"

#include "fa4jit/codegen/candidates.h"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/resource_model.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include <catch2/catch.hpp>

#include <set>

using namespace fa4jit;

namespace {
bool anyReason(const CandidateList &l, const std::string &label_part, const std::string &reason_part) {
  for (const auto &p : l.pruned)
    if (p.label.find(label_part) != std::string::npos && p.reason.find(reason_part) != std::string::npos)
      return true;
  return false;
}
} // namespace

TEST_CASE("candidates: heuristic first, deterministic, all valid, emittable and within resources", "[candidates]") {
  for (Target t : {Target::Sm90a, Target::Sm100a, Target::Sm80})
    for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP})
      for (int d : {64, 128, 256}) {
        if (t == Target::Sm80 && r != Route::Bf16)
          continue;
        DYNAMIC_SECTION(toString(t) << " " << toString(r) << " d" << d) {
          auto a = enumerateAttentionCandidates(r, d, true, t, 4096);
          REQUIRE_OK(a);
          REQUIRE_FALSE(a->kept.empty());
          CHECK(a->heuristic == 0);
          CHECK(specsEqual(a->kept[0].spec, canonicalize(defaultAttentionSpec(r, d, true, t))));
          std::set<std::string> unique;
          for (const auto &c : a->kept) {
            INFO(c.label);
            CHECK(c.reason.empty());
            CHECK(specViolations(c.spec).empty());
            CHECK(estimateResources(c.spec).fits());
            CHECK(static_cast<bool>(emitKernel(c.spec)));
            CHECK(unique.insert(toJson(c.spec)).second);
            CHECK(c.label == candidateLabel(c.spec));
          }
          for (const auto &p : a->pruned)
            CHECK_FALSE(p.reason.empty());
          auto b = enumerateAttentionCandidates(r, d, true, t, 4096);
          REQUIRE_OK(b);
          REQUIRE(b->kept.size() == a->kept.size());
          for (size_t i = 0; i < a->kept.size(); ++i)
            CHECK(toJson(a->kept[i].spec) == toJson(b->kept[i].spec));
        }
      }
}

TEST_CASE("candidates: directp searches fitted classifiers, the other routes none", "[candidates]") {
  auto dp = enumerateAttentionCandidates(Route::DirectP, 128, false, Target::Sm90a, 4096);
  REQUIRE_OK(dp);
  std::set<ClassifierKind> kinds;
  bool fitted = false;
  for (const auto &c : dp->kept) {
    kinds.insert(c.spec.attention.classifier.kind);
    if (c.spec.attention.classifier.kind == ClassifierKind::Affine)
      fitted |= c.spec.attention.classifier.alpha != 2.0f || c.spec.attention.classifier.beta != 0.0f;
  }
  CHECK(kinds.size() == 4); // piecewise, threshold, fitted affine and mixed
  CHECK(fitted);
  // Both sm_90a kernels (mma.sync and wgmma-ws) are searched, whichever the heuristic picks.
  std::set<AttentionSchedule> schedules;
  for (const auto &c : dp->kept)
    schedules.insert(c.spec.attention.tile.schedule.kernel);
  CHECK(schedules.size() == 2);
  auto nv = enumerateAttentionCandidates(Route::Nvfp8, 128, false, Target::Sm90a, 4096);
  REQUIRE_OK(nv);
  for (const auto &c : nv->kept)
    CHECK(c.label.find("affine") == std::string::npos);
  CHECK(nv->kept.size() < dp->kept.size());
  CandidateSpace narrow;
  narrow.all_kernels = false;
  auto only = enumerateAttentionCandidates(Route::DirectP, 128, false, Target::Sm90a, 4096, narrow);
  REQUIRE_OK(only);
  const AttentionSchedule chosen = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a).attention.tile.schedule.kernel;
  for (const auto &c : only->kept)
    CHECK(c.spec.attention.tile.schedule.kernel == chosen);
}

TEST_CASE("candidates: impossible tiles are pruned with the resource named", "[candidates]") {
  CandidateSpace wide;
  wide.block_n = {64, 128, 256};
  wide.warps = {4, 16};
  auto a = enumerateAttentionCandidates(Route::Bf16, 128, false, Target::Sm90a, 4096, wide);
  REQUIRE_OK(a);
  CHECK(anyReason(*a, "mma m64 n256 w4", "registers"));
  CHECK(anyReason(*a, "mma m256", "registers")); // 16 warps: at most 128 registers per thread
  auto sm89 = enumerateAttentionCandidates(Route::Bf16, 128, false, Target::Sm89, 4096, wide);
  REQUIRE_OK(sm89);
  CHECK(anyReason(*sm89, "m256 n64", "shared memory"));
  // Short sequences: tiles longer than the bucket are dropped, the heuristic stays.
  auto shortSeq = enumerateAttentionCandidates(Route::Bf16, 64, false, Target::Sm90a, 32);
  REQUIRE_OK(shortSeq);
  CHECK(specsEqual(shortSeq->kept[0].spec, canonicalize(defaultAttentionSpec(Route::Bf16, 64, false, Target::Sm90a))));
  for (size_t i = 1; i < shortSeq->kept.size(); ++i)
    CHECK(shortSeq->kept[i].spec.attention.tile.shape.block_n <= 32);
  CHECK(anyReason(*shortSeq, "n128", "exceeds the sequence bucket 32"));
  auto bad = enumerateAttentionCandidates(Route::DirectP, 96, false, Target::Sm90a, 4096);
  REQUIRE_ERR(bad);
  llvm::consumeError(bad.takeError());
}

TEST_CASE("resource model: registers, shared memory and TMEM", "[candidates]") {
  KernelSpec s = withAttentionSchedule(defaultAttentionSpec(Route::Nvfp8, 256, false, Target::Sm90a),
                                       AttentionSchedule::MmaSync);
  ResourceEstimate r = estimateResources(s);
  CHECK(r.fits());
  const int n = s.attention.tile.shape.block_n;
  CHECK(r.registers == 256 / 2 + n / 2 + n / 8 + kAttentionFixedRegisters);
  CHECK(r.shared_bytes == attentionSharedBytes(s.attention));
  CHECK(r.shared_cap == 227 * 1024);
  s.attention.tile.shape.block_n = 128; // spilled on sm_90a: S beside a 256-wide O
  CHECK_FALSE(estimateResources(s).fits());
  CHECK(estimateResources(s).violations.at(0).find("registers") == 0);
  // wgmma-ws consumers: 240 registers with prewidened K/V, 216 with in-kernel widening. D = 256
  // with 128 FP8 keys fits the serial loop (P takes S's registers), not the overlapped one.
  KernelSpec w = withScoresFp16(withAttentionSchedule(defaultAttentionSpec(Route::DirectP, 256, false, Target::Sm90a),
                                                      AttentionSchedule::WgmmaWarpSpecialized),
                                false); // (FP32 scores: FP16 ones take half S's registers)
  REQUIRE(w.attention.tile.shape.block_n == 128);
  REQUIRE_FALSE(w.attention.tile.pipeline.overlap);
  CHECK(estimateResources(w).register_cap == kWgmmaConsumerRegistersPrewidened);
  CHECK(estimateResources(w).fits());
  CHECK(estimateResources(w).registers == 256 / 2 + 128 / 2 + kWgmmaFixedRegisters);
  w.attention.tile.pipeline.overlap = true;
  CHECK_FALSE(estimateResources(w).fits());
  w.attention.tile.pipeline.overlap = false;
  w.attention.tile.staging.kv = KvStaging::InKernel;
  CHECK(estimateResources(w).register_cap == kWgmmaConsumerRegistersInKernel);
  // The bf16 wgmma kernel at D = 256: BF16 P takes twice FP8's registers; 80 keys fit in 240.
  KernelSpec wb = withAttentionSchedule(defaultAttentionSpec(Route::Bf16, 256, false, Target::Sm90a),
                                        AttentionSchedule::WgmmaWarpSpecialized);
  CHECK(wb.attention.tile.staging.kv == KvStaging::TensorMap);
  CHECK(estimateResources(wb).register_cap == kWgmmaConsumerRegistersPrewidened); // one producer thread too
  CHECK(estimateResources(wb).fits());
  REQUIRE(wb.attention.tile.shape.block_n == 80); // (FlashAttention-3's tile at D = 256)
  CHECK(estimateResources(wb).registers == 256 / 2 + 80 / 2 + kWgmmaFixedRegisters); // serial: P in S's registers
  wb.attention.tile.pipeline.overlap = true; // P of 80 keys beside S and O: 228 of 240
  CHECK(estimateResources(wb).fits());
  // Three consumers (block_m 192, D = 64 default): 160 registers each; D = 128 fits 128-key tiles
  // with FP16 scores (S of 32 registers, the nvfp8 default) and 96 with FP32 ones (128 keys of FP32
  // S spill: CI's SASS check saw 192 bytes).
  KernelSpec w3 = defaultAttentionSpec(Route::Nvfp8, 64, false, Target::Sm90a);
  REQUIRE(w3.attention.tile.shape.block_m == 192);
  CHECK(estimateResources(w3).register_cap == kWgmmaConsumerRegistersThreeConsumers);
  CHECK(estimateResources(w3).fits());
  KernelSpec w3d = defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a); // three consumers by default
  REQUIRE(w3d.attention.tile.shape.block_m == 192);
  CHECK(w3d.attention.tile.shape.block_n == 128);
  CHECK(w3d.attention.tile.softmax.scores_fp16);
  CHECK(estimateResources(w3d).fits());
  w3d = withScoresFp16(w3d, false);
  CHECK_FALSE(estimateResources(w3d).fits());
  w3d.attention.tile.shape.block_n = 96;
  CHECK(estimateResources(w3d).fits());
  w3d.attention.tile.shape.block_n = 64;
  CHECK(estimateResources(w3d).fits());
  w3d.attention.tile.shape.block_n = 128;
  CHECK_FALSE(estimateResources(w3d).fits());
  // tcgen05 on sm_100a: the TMEM planner decides.
  KernelSpec t = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm100a);
  REQUIRE(usesTensorMemory(t));
  ResourceEstimate tr = estimateResources(t);
  CHECK(tr.fits());
  CHECK(tr.tmem_columns > 0);
  CHECK(tr.tmem_columns <= 512);
  KernelSpec big = t;
  big.attention.head_dim = 256;
  big.attention.tile.shape.block_n = 256;
  big.attention.tile.shape.block_m = 256; // two Q tiles of 128 rows: 2 x (256 S + 256 O) columns > 512
  big.attention.tmem = TmemPlanRef{};
  ResourceEstimate br = estimateResources(big);
  CHECK_FALSE(br.fits());
  bool tmem = false;
  for (const auto &v : br.violations)
    tmem |= v.find("tensor memory") == 0;
  CHECK(tmem);
  // mma.sync on sm_100a uses no TMEM.
  CHECK_FALSE(usesTensorMemory(withAttentionSchedule(defaultAttentionSpec(Route::Bf16, 128, false, Target::Sm100a),
                                                     AttentionSchedule::MmaSync)));
}

// What the sm_90a search holds for the bf16 route's BF16 wgmma kernel (repacked K/V only) beside
// its mma.sync one, and for the FP8-fed routes at D <= 128 the normalizer summed by the PV wgmma
// and, as the alternative, on the ALUs.
TEST_CASE("candidates: bf16 wgmma kernels and where l is summed", "[candidates]") {
  auto bf16 = enumerateAttentionCandidates(Route::Bf16, 128, false, Target::Sm90a, 4096);
  REQUIRE_OK(bf16);
  int wgmma = 0, mma_sync = 0, tensor_map = 0, repacked = 0;
  for (const auto &c : bf16->kept) {
    INFO(c.label);
    if (c.spec.attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized) {
      ++wgmma;
      CHECK(c.spec.attention.tile.staging.kv != KvStaging::InKernel);
      tensor_map += c.spec.attention.tile.staging.kv == KvStaging::TensorMap;
      repacked += c.spec.attention.tile.staging.kv == KvStaging::Prewidened;
      CHECK_FALSE(c.spec.attention.tile.softmax.mma_row_sum);
    } else {
      ++mma_sync;
    }
  }
  CHECK(wgmma >= 2);
  CHECK(mma_sync >= 1);
  CHECK(tensor_map >= 1); // the default: tiles by TMA tensor maps
  CHECK(repacked >= 1);   // its alternative: tiles repacked by a pass
  for (Route r : {Route::Nvfp8, Route::DirectP}) {
    auto a = enumerateAttentionCandidates(r, 128, false, Target::Sm90a, 4096);
    REQUIRE_OK(a);
    REQUIRE(a->kept[0].spec.attention.tile.softmax.mma_row_sum);
    bool alu_sum = false;
    for (const auto &c : a->kept)
      alu_sum = alu_sum || (c.spec.attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized &&
                            !c.spec.attention.tile.softmax.mma_row_sum);
    CHECK(alu_sum);
    auto wide = enumerateAttentionCandidates(r, 256, false, Target::Sm90a, 4096);
    REQUIRE_OK(wide);
    for (const auto &c : wide->kept)
      CHECK_FALSE(c.spec.attention.tile.softmax.mma_row_sum); // N = 256 + 8 exceeds the wgmma's N
  }
}
