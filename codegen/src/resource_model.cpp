// Registers, shared memory and TMEM of one attention CTA (resource_model.h).
#include "fa4jit/codegen/resource_model.h"

#include <algorithm>
#include <cassert>

#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_validate.h"

#include "llvm/Support/Error.h"

namespace fa4jit {

bool usesTensorMemory(const KernelSpec &spec) { return isTcgen05Attention(spec); }

ResourceEstimate estimateResources(const KernelSpec &spec) {
  assert(spec.family == KernelFamily::AttentionForward && "resource model covers attention kernels");
  const AttentionSpec &a = spec.attention;
  ResourceEstimate r;
  r.threads = a.tile.shape.warps * 32;
  r.uses_tmem = usesTensorMemory(spec);

  // mma.sync m16n8: each warp owns 16 rows, so per thread O holds 16 * head_dim / 32 FP32 values
  // and S 16 * block_n / 32; a wgmma consumer warpgroup owns 64 rows over 128 threads, the same
  // per thread (FP16 scores: half of S's). P is packed two BF16 (bf16 route) or four E4M3 values
  // per register.
  // The serial wgmma loop packs P as the softmax consumes S, which is dead before the PV (ptxas
  // reuses its registers: D = 256 with 128 FP8 keys does not spill there); the overlapped one keeps
  // tile j's S beside tile j-1's P.
  const int p_registers = a.route == Route::Bf16 ? a.tile.shape.block_n / 4 : a.tile.shape.block_n / 8;
  const bool p_beside_s = a.tile.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized || a.tile.pipeline.overlap;
  // FP16 scores (scores_fp16) hold S as pairs: block_n / 4 registers.
  const int s_registers = a.tile.softmax.scores_fp16 ? a.tile.shape.block_n / 4 : a.tile.shape.block_n / 2;
  const int accumulators = a.head_dim / 2 + s_registers + (p_beside_s ? p_registers : 0);
  if (r.uses_tmem) {
    r.registers = kAttentionFixedRegisters;
    r.register_cap = kMaxRegistersPerThread;
  } else if (a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized) {
    r.registers = accumulators + (a.tile.shape.block_m == 192 ? kWgmmaFixedRegistersThreeConsumers : kWgmmaFixedRegisters);
    // (tensor maps: one producer thread as with prewidened tiles, so the same split)
    r.register_cap = a.tile.shape.block_m == 192                    ? kWgmmaConsumerRegistersThreeConsumers
                     : a.tile.staging.kv != KvStaging::InKernel ? kWgmmaConsumerRegistersPrewidened
                                                                : kWgmmaConsumerRegistersInKernel;
  } else {
    r.registers = accumulators + kAttentionFixedRegisters;
    r.register_cap = r.threads > 0 ? std::min(kMaxRegistersPerThread, kRegisterFileEntries / r.threads)
                                   : kMaxRegistersPerThread;
  }
  if (r.registers > r.register_cap)
    r.violations.push_back("registers: ~" + std::to_string(r.registers) + " per thread > " +
                           std::to_string(r.register_cap) + " (" + std::to_string(r.threads) +
                           " threads; the accumulators would spill to local memory)");

  r.shared_bytes = attentionSharedBytes(a);
  r.shared_cap = targetLimits(spec.target).max_shared_bytes;
  if (r.shared_bytes > r.shared_cap)
    r.violations.push_back("shared memory: " + std::to_string(r.shared_bytes) + " bytes > " +
                           std::to_string(r.shared_cap) + " (" + toString(spec.target) + " opt-in maximum)");

  if (r.uses_tmem) {
    // The planner's verdict (columns of S, O, P and scale factors within 512), and the spec's
    // recorded plan must be the planner's (the emitter refuses it otherwise).
    auto plan = tcgen05TmemPlan(spec);
    if (!plan)
      r.violations.push_back("tensor memory: " + llvm::toString(plan.takeError()));
    else
      r.tmem_columns = plan->columns_allocated;
  }
  return r;
}

} // namespace fa4jit
