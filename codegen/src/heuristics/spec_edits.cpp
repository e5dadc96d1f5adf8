// Spec edits that keep a spec valid: moving it to another schedule, another score accumulator,
// the key blocks that fit its tile, a backward to another main pass (heuristics.h).
#include "decisions.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_validate.h"

namespace fa4jit {

KernelSpec withBackwardMma(KernelSpec s, BackwardMma mma) {
  const decisions::BackwardChoice choice = decisions::backwardChoice(s.backward.forward.head_dim, mma);
  s.backward.mma = choice.mma;
  s.backward.tile = choice.tile;
  return s;
}

KernelSpec withAttentionSchedule(KernelSpec s, AttentionSchedule schedule) {
  AttentionSpec &a = s.attention;
  if (schedule == AttentionSchedule::MmaSync) {
    a.tile = decisions::mmaSyncTiles(a.route, a.head_dim);
    return withScoresFp16(s, false); // (FP32 scores: the default widening shift)
  }
  if (!decisions::sm90WgmmaTiles(a.route, a.head_dim, a.causal, a.tile))
    a.tile.schedule.kernel = schedule; // (a head dim without a row: spec_validate names it)
  return withScoresFp16(std::move(s), a.tile.softmax.scores_fp16);
}

KernelSpec withScoresFp16(KernelSpec s, bool fp16) {
  AttentionSpec &a = s.attention;
  a.tile.softmax.scores_fp16 = fp16;
  if (!fp16)
    a.tile.softmax.exp2_poly_tiles = 0; // (the polynomial takes FP16 exponents)
  a.operands.qk_widen_shift =
      fp16 ? std::max(a.operands.qk_widen_shift, minScoresFp16WidenShift(a.head_dim)) : OperandSpec{}.qk_widen_shift;
  return s;
}

KernelSpec withQkFormat(KernelSpec s, QkFormat format) {
  AttentionSpec &a = s.attention;
  a.operands.qk_format = format;
  if (format == QkFormat::E4m3 && a.operands.qk_widening == Widening::Bf16) {
    a.operands.qk_widening = Widening::E4m3;
    return withScoresFp16(std::move(s), a.tile.softmax.scores_fp16);
  }
  return s;
}

bool threadKeyBlocksFit(const KernelSpec &spec) {
  const AttentionSpec &a = spec.attention;
  if (a.route != Route::DirectP || a.tile.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized)
    return false;
  KernelSpec with = spec, without = spec;
  with.attention.tile.softmax.thread_key_blocks = true;
  without.attention.tile.softmax.thread_key_blocks = false;
  const std::vector<std::string> before = specViolations(without);
  for (const std::string &v : specViolations(with)) // (a violation both share is not theirs)
    if (std::find(before.begin(), before.end(), v) == before.end())
      return false;
  return true;
}

// D128's three consumers fit 128-key tiles only with FP16 scores (and directp's only with thread key
// blocks): a variant without them takes 96-key tiles there.
KernelSpec decisions::fittingThreeConsumerKeys(KernelSpec s) {
  TileSpec &t = s.attention.tile;
  if (t.shape.block_m == 192 && t.shape.block_n == 128 && s.attention.head_dim == 128 && !specViolations(s).empty())
    t.shape.block_n = 96;
  return s;
}

KernelSpec keepingFitKeyBlocks(KernelSpec s) {
  if (!threadKeyBlocksFit(s)) {
    s.attention.tile.softmax.thread_key_blocks = false;
    s = decisions::fittingThreeConsumerKeys(std::move(s));
  }
  return s;
}

} // namespace fa4jit
