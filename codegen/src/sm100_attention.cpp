// The sm_100a tcgen05 attention kernel's codegen side (sm100_attention.h).
#include "fa4jit/codegen/sm100_attention.h"

#include <fmt/format.h>

#include <cassert>
#include <string>

#include "fa4jit/codegen/tmem_planner.h"

namespace fa4jit {
namespace {

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "sm_100a attention: %s", msg.c_str());
}

int roundUp1024(int bytes) { return (bytes + 1023) / 1024 * 1024; }

} // namespace

bool isTcgen05Attention(const KernelSpec &spec) {
  return spec.family == KernelFamily::AttentionForward && spec.target == Target::Sm100a &&
         spec.attention.route != Route::Bf16 && spec.attention.operands.qk_widening == Widening::Native;
}

KernelSpec withTcgen05Kernel(KernelSpec spec) {
  AttentionSpec &a = spec.attention;
  assert(spec.target == Target::Sm100a && a.route != Route::Bf16 && "the tcgen05 kernel serves nvfp8/directp on sm_100a");
  a.tile.shape.block_m = Tcgen05AttentionTiles::kBlockM;
  a.tile.shape.warps = Tcgen05AttentionTiles::kWarps;
  a.tile.shape.block_n = Tcgen05AttentionTiles::kBlockN;
  a.tile.pipeline.stages = Tcgen05AttentionTiles::kStages;
  a.operands.qk_widening = Widening::Native;
  // directp: Direct-P's block exponents are MXFP4 scales, fed as they are (kind::mxf4). nvfp8: V is
  // stored in E4M3 and P is E4M3 (kind::f8f6f4), "e4m3" meaning fed as stored.
  a.operands.v_widening = a.route == Route::DirectP ? Widening::Native : Widening::E4m3;
  a.operands.v_keys_permuted16 = false; // the Hopper register-P key order means nothing here
  a.tmem = TmemPlanRef{};
  llvm::Expected<TmemPlanRef> plan = tcgen05TmemPlan(spec);
  assert(plan && "the TMEM planner accepts every default sm_100a attention shape");
  if (!plan) { // keep the record empty (the emitter then reports the planner's reason)
    llvm::consumeError(plan.takeError());
    return spec;
  }
  a.tmem = *plan;
  return spec;
}

llvm::Expected<TmemPlanRef> tcgen05TmemPlan(const KernelSpec &spec) {
  if (!isTcgen05Attention(spec))
    return fail("spec is not served by the tcgen05 kernel (needs sm_100a, nvfp8 or directp, qk_widening native)");
  llvm::Expected<tmem::TmemRequest> request = tmem::requestFromSpec(spec);
  if (!request)
    return request.takeError();
  llvm::Expected<tmem::TmemPlan> plan = tmem::planTmem(*request);
  if (!plan)
    return plan.takeError();
  if (!plan->fits)
    return fail("TMEM plan does not fit: " + plan->rejected_reason);
  TmemPlanRef ref;
  if (llvm::Error e = tmem::fillTmemPlanRef(*plan, ref))
    return e;
  const TmemPlanRef &rec = spec.attention.tmem;
  if (rec.columns_allocated != 0 &&
      (rec.columns_allocated != ref.columns_allocated || rec.s_col[0] != ref.s_col[0] || rec.o_col[0] != ref.o_col[0] ||
       rec.sf_col != ref.sf_col))
    return fail(fmt::format("attention.tmem records columns {0} S {1} O {2} SF {3}, the planner gives {4} S {5} O {6} "
                            "SF {7}: re-plan the spec",
                            rec.columns_allocated, rec.s_col[0], rec.o_col[0], rec.sf_col, ref.columns_allocated,
                            ref.s_col[0], ref.o_col[0], ref.sf_col));
  return ref;
}

int tcgen05AttentionSharedBytes(const AttentionSpec &a) {
  // Payloads (NVFP4 Q/K rows of D/2 bytes; V^T rows of block_n keys, MXFP4 or E4M3), scale-factor
  // atoms of 512 bytes in 1024-byte slots (SFK and SFV per stage, SFQ and SFP once), then the
  // mbarriers (Q, QK done, PV done, one per stage) and a 16-byte slot for the TMEM address.
  const bool directp = a.route == Route::DirectP;
  const int d = a.head_dim, bn = a.tile.shape.block_n;
  const int q = a.tile.shape.block_m * d / 2;
  const int k = bn * d / 2;
  const int v = d * (directp ? bn / 2 : bn);
  const int qk_sf = roundUp1024((d / 64) * 512);
  const int stage = k + v + qk_sf + 1024;
  return q + a.tile.pipeline.stages * stage + qk_sf + 1024 + 8 * (3 + a.tile.pipeline.stages) + 16;
}

llvm::Expected<std::vector<BakedConstant>> tcgen05BakedConstants(const KernelSpec &spec) {
  llvm::Expected<TmemPlanRef> plan = tcgen05TmemPlan(spec);
  if (!plan)
    return plan.takeError();
  auto col = [](const char *name, int v, const char *note) {
    return BakedConstant{name, "int", std::to_string(v), note};
  };
  const TmemPlanRef &p = *plan;
  return std::vector<BakedConstant>{
      {"stages", "int", std::to_string(spec.attention.tile.pipeline.stages), "K/V shared-memory buffers"},
      col("tmem_columns", p.columns_allocated, "tcgen05.alloc (TMEM planner)"),
      col("tmem_s_col", p.s_col[0], "S: FP32 scores"),
      col("tmem_o_col", p.o_col[0], "O: FP32 accumulator"),
      col("tmem_p_col", p.p_col[0], "P: aliases the top of S"),
      col("tmem_sfq_col", p.sfq_col[0], "UE4M3 scales of Q"),
      col("tmem_sfk_col", p.sfk_col[0], "UE4M3 scales of K"),
      col("tmem_sfp_col", p.sfp_col[0], "UE8M0 scales of P (directp)"),
      col("tmem_sfv_col", p.sfv_col[0], "UE8M0 scales of V (directp)"),
  };
}

} // namespace fa4jit
