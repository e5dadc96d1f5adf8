// The tuner's alternatives to the wgmma kernel's defaults (alternatives.h).
#include "decisions.h"

#include <algorithm>

#include "fa4jit/codegen/alternatives.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/resource_model.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

namespace fa4jit {

using decisions::fittingThreeConsumerKeys;

std::vector<KernelSpec> wgmmaScheduleAlternatives(const KernelSpec &base) {
  std::vector<KernelSpec> out;
  const TileSpec &t = base.attention.tile;
  if (t.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized)
    return out;
  if (t.pipeline.overlap) { // the consumer loop without the softmax/PV overlap (and so without turns)
    KernelSpec serial = base;
    serial.attention.tile.pipeline.overlap = false;
    serial.attention.tile.pipeline.pingpong = false;
    out.push_back(serial);
  }
  if (!t.pipeline.overlap && t.pipeline.stages >= 2) { // the overlapped loop where the default is serial
    KernelSpec overlapped = base;
    overlapped.attention.tile.pipeline.overlap = true;
    if (!estimateResources(overlapped).fits()) // (P of the previous tile beside S: 64 keys at D = 256)
      overlapped.attention.tile.shape.block_n = 64;
    out.push_back(overlapped);
  }
  if (t.softmax.mma_row_sum) { // l summed on the ALUs from the decoded P bytes
    KernelSpec alu_sum = base;
    alu_sum.attention.tile.softmax.mma_row_sum = false;
    out.push_back(alu_sum);
  }
  KernelSpec fused = base; // the persistent grid's images by its own spare warps, or by the passes
  fused.attention.tile.staging.fused_widening = true;
  if (fusesWidening(fused.attention)) {
    KernelSpec widening = base;
    widening.attention.tile.staging.fused_widening = !fusesWidening(base.attention);
    out.push_back(widening);
  }
  if (t.schedule.persistent) { // one CTA per work tile, Q widened by its producer
    KernelSpec per_tile = base;
    per_tile.attention.tile.schedule.persistent = false;
    per_tile.attention.tile.schedule.kv_multicast = false;
    out.push_back(per_tile);
  } else if (t.staging.kv != KvStaging::InKernel) { // the persistent grid where it is not the default
    KernelSpec persistent = base;
    persistent.attention.tile.schedule.persistent = true;
    out.push_back(persistent);
  }
  if (t.pipeline.pingpong) { // consumers issuing their wgmmas without taking turns
    KernelSpec free_running = base;
    free_running.attention.tile.pipeline.pingpong = false;
    // (where the validator says the tile spills without the turns: 64-key tiles there)
    if (!specViolations(free_running).empty())
      free_running.attention.tile.shape.block_n = 64;
    out.push_back(free_running);
  } else { // taking turns where the default does not (causal: where counts agree; the serial loop too)
    KernelSpec turns = base;
    turns.attention.tile.pipeline.pingpong = true;
    out.push_back(turns);
  }
  // bf16: the tiles repacked by a pass (and bulk-copied) instead of loaded by tensor maps, or back.
  if (base.attention.route == Route::Bf16 && t.staging.kv != KvStaging::InKernel) {
    KernelSpec other = base;
    other.attention.tile.staging.kv =
        t.staging.kv == KvStaging::TensorMap ? KvStaging::Prewidened : KvStaging::TensorMap;
    if (t.shape.block_n == 80) // (the repacked V^T's rows are whole 128-byte blocks: 64 keys)
      other.attention.tile.shape.block_n = 64;
    out.push_back(other);
  }
  // Every CTA's producer widens K/V itself (FP8-fed routes; bf16 tiles are never widened).
  if (t.staging.kv == KvStaging::Prewidened && base.attention.route != Route::Bf16) {
    KernelSpec in_kernel = base;
    in_kernel.attention.tile.staging.kv = KvStaging::InKernel;
    in_kernel.attention.tile.schedule.persistent = false; // (the persistent producer is one thread)
    in_kernel.attention.tile.schedule.kv_multicast = false;
    in_kernel.attention.tile.shape.block_n = std::min(t.shape.block_n, 128); // (its V^T: one column block)
    in_kernel.attention.tile.shape.block_m = 128; // (three consumers leave the producer one thread)
    in_kernel.attention.tile.shape.warps = 12;
    if (!estimateResources(in_kernel).fits()) // (its consumers have 216 registers: 64 keys at D = 256)
      in_kernel.attention.tile.shape.block_n = 64;
    out.push_back(in_kernel);
  }
  // The other consumer count: two where the default has three, three (192 rows, the key tile that
  // fits 160 registers: 128 keys at D = 64, 64 at D = 128) where it has two.
  const bool fp8_d128 = base.attention.route != Route::Bf16 && base.attention.head_dim == 128;
  if (t.shape.block_m == 192) {
    KernelSpec two = base;
    two.attention.tile.shape.block_m = 128;
    two.attention.tile.shape.warps = 12;
    two.attention.tile.shape.block_n = base.attention.route == Route::DirectP ? 192 : 128;
    out.push_back(two);
  } else if (base.attention.head_dim <= 128 && t.staging.kv != KvStaging::InKernel) {
    KernelSpec three = base;
    three.attention.tile.shape.block_m = 192;
    three.attention.tile.shape.warps = 16;
    three.attention.tile.shape.block_n = base.attention.head_dim <= 64 ? 128 : 64;
    out.push_back(three);
  }
  if (t.shape.block_m == 192 && fp8_d128 && t.shape.block_n != 96) { // three consumers of 96-key tiles (fits at D128)
    KernelSpec keys96 = base;
    keys96.attention.tile.shape.block_n = 96;
    out.push_back(keys96);
  } else if (t.shape.block_m == 128 && fp8_d128 && t.staging.kv != KvStaging::InKernel) {
    KernelSpec keys96 = base;
    keys96.attention.tile.shape.block_m = 192;
    keys96.attention.tile.shape.warps = 16;
    keys96.attention.tile.shape.block_n = 96;
    out.push_back(keys96);
  }
  for (KernelSpec &alt : out) // (alternatives that moved the key tile keep the quad blocks)
    alt = keepingFitKeyBlocks(std::move(alt));
  // directp: its 32-key blocks in as few threads as the tile allows (key_order.cuh), or back in
  // quads; at D128 also the 128-key tiles, where a block lies in one thread.
  if (base.attention.route == Route::DirectP) {
    KernelSpec other = base;
    other.attention.tile.softmax.thread_key_blocks = !t.softmax.thread_key_blocks;
    other = fittingThreeConsumerKeys(std::move(other));
    if (!other.attention.tile.softmax.thread_key_blocks || threadKeyBlocksFit(other))
      out.push_back(other);
    if (base.attention.head_dim == 128 && t.shape.block_n == 96 && t.staging.kv != KvStaging::InKernel) {
      KernelSpec two = base; // two consumers, the overlapped loop (three of 128 keys spill there)
      two.attention.tile.softmax.thread_key_blocks = true;
      two.attention.tile.shape.block_n = 128;
      two.attention.tile.shape.block_m = 128;
      two.attention.tile.shape.warps = 12;
      out.push_back(two);
      KernelSpec three = base; // three consumers on the serial loop (taking turns measured -2% to -5%)
      three.attention.tile.softmax.thread_key_blocks = true;
      three.attention.tile.shape.block_n = 128;
      three.attention.tile.shape.block_m = 192;
      three.attention.tile.shape.warps = 16;
      three.attention.tile.pipeline.overlap = false;
      three.attention.tile.pipeline.pingpong = false;
      out.push_back(three);
    }
  }
  // nvfp8 on FP16 scores: half of each tile's exp2 as the FP16 polynomial, or none.
  if (base.attention.route == Route::Nvfp8 && t.softmax.scores_fp16) {
    KernelSpec poly = base;
    poly.attention.tile.softmax.exp2_poly_tiles = t.softmax.exp2_poly_tiles == 0 ? t.shape.block_n / 16 : 0;
    if (specViolations(poly).empty())
      out.push_back(poly);
  }
  // directp's piecewise classifier: its pieces from S, or from y_h formed first.
  if (canonicalize(base).attention.tile.softmax.pieces_from_scores) {
    KernelSpec unfolded = base;
    unfolded.attention.tile.softmax.pieces_from_scores = false;
    out.push_back(unfolded);
  }
  // S accumulated in FP16 (Q/K widened by 2^-7 or 2^-8), or back in FP32 (D128's three consumers
  // then on 96-key tiles, quad blocks).
  if (base.attention.route != Route::Bf16) {
    const KernelSpec scores = fittingThreeConsumerKeys(withScoresFp16(base, !t.softmax.scores_fp16));
    if (specViolations(scores).empty())
      out.push_back(scores);
  }
  return out;
}

} // namespace fa4jit
