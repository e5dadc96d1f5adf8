// Every variant the generator can emit (variants.h): the list CI compiles for every target.
#include <algorithm>
#include <iterator>

#include "fa4jit/codegen/alternatives.h"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/codegen/variants.h"

#include "decisions.h"

namespace fa4jit {
namespace {

constexpr Target kAllTargets[] = {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a};
constexpr int kHeadDims[] = {64, 128, 256};
constexpr Route kAllRoutes[] = {Route::Bf16, Route::Nvfp8, Route::DirectP};

} // namespace

std::vector<KernelSpec> enumerateQuantizeVariants(Target target) {
  std::vector<KernelSpec> out;
  for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead})
    for (int d : kHeadDims)
      for (QuantInput input : {QuantInput::Bf16, QuantInput::F32, QuantInput::F16})
        for (bool permuted : {false, true}) {
          if (permuted && f == QuantFormat::Nvfp4)
            continue; // rows of Q/K have no key order to permute
          out.push_back(defaultQuantizeSpec(f, d, target, input, permuted));
        }
  // E4M3 Q/K carry the attention kernel's shift (baked): FP32 scores' 3 and FP16 scores' least.
  for (int d : kHeadDims)
    for (QuantInput input : {QuantInput::Bf16, QuantInput::F32, QuantInput::F16})
      for (int shift : {3, minScoresFp16WidenShift(d)}) {
        KernelSpec s = defaultQuantizeSpec(QuantFormat::E4m3Rows, d, target, input);
        s.quantize.code_shift = shift;
        out.push_back(s);
      }
  return out;
}

std::vector<KernelSpec> enumerateMergeVariants(Target target) {
  std::vector<KernelSpec> out;
  for (StateType value : {StateType::Bf16, StateType::F16, StateType::F32})
    for (int d : kHeadDims)
      out.push_back(defaultMergeSpec(value, d, target));
  return out;
}

std::vector<KernelSpec> enumeratePagedKvVariants(Target target) {
  std::vector<KernelSpec> out;
  for (int d : {64, 128})
    for (int page_size = 16; page_size <= 256; page_size *= 2)
      for (int warps : {4, 8})
        for (KvValueFormat value : {KvValueFormat::Fp8, KvValueFormat::Mxfp4})
          for (int kv_stages : {0, 2, 3}) {
            KernelSpec s = defaultPagedKvSpec(d, page_size, warps, target, value);
            s.paged.kv_stages = kv_stages;
            out.push_back(s);
          }
  return out;
}

std::vector<KernelSpec> enumerateAttentionVariants(Target target) {
  std::vector<KernelSpec> out;
  if (!attentionTemplatesAvailable())
    return out;
  for (Route r : kAllRoutes) {
    if (r != Route::Bf16 && !hasFp8TensorCores(target))
      continue; // FP8-fed routes need FP8 tensor cores
    for (int d : kHeadDims)
      for (bool causal : {false, true}) {
        // On sm_90a the FP8-fed routes default to wgmma; their mma.sync kernel stays a variant
        // (the tuner's alternative); `s` below is that mma.sync kernel (tcgen05 on sm_100a).
        const KernelSpec chosen = defaultAttentionSpec(r, d, causal, target);
        const bool wgmma = chosen.attention.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized;
        const KernelSpec s = wgmma ? withAttentionSchedule(chosen, AttentionSchedule::MmaSync) : chosen;
        out.push_back(s);
        if (wgmma)
          out.push_back(chosen);
        // E4M3 Q/K (the fp8 presets): each producer path that fills the Q/K images, on the default
        // wgmma kernel (its passes or its spare warps), the other causal grid and the in-kernel
        // producer.
        std::vector<KernelSpec> e4m3_qk;
        if (wgmma && r != Route::Bf16) {
          e4m3_qk.push_back(withQkFormat(chosen, QkFormat::E4m3));
          KernelSpec in_kernel = chosen;
          TileSpec &t = in_kernel.attention.tile;
          t.staging.kv = KvStaging::InKernel, t.staging.fused_widening = false;
          t.schedule.persistent = false, t.schedule.kv_multicast = false;
          if (!causal && specViolations(in_kernel).empty())
            e4m3_qk.push_back(withQkFormat(in_kernel, QkFormat::E4m3));
        }
        if (causal) {
          // The causal grid of the other kind (the persistent one hands work tiles out at run time,
          // its own code path): the engine picks it by length (defaultAttentionSpecForKeys).
          if (wgmma && chosen.attention.tile.staging.kv != KvStaging::InKernel) {
            KernelSpec grid = chosen;
            grid.attention.tile.schedule.persistent = !grid.attention.tile.schedule.persistent;
            out.push_back(grid);
            // the persistent causal grid's images by the passes too, or by its spare warps
            KernelSpec persistent = chosen.attention.tile.schedule.persistent ? chosen : grid;
            if (r != Route::Bf16) {
              persistent.attention.tile.staging.fused_widening = !fusesWidening(persistent.attention);
              out.push_back(persistent);
              e4m3_qk.push_back(withQkFormat(grid, QkFormat::E4m3));
              e4m3_qk.push_back(withQkFormat(persistent, QkFormat::E4m3));
            }
          }
          out.insert(out.end(), e4m3_qk.begin(), e4m3_qk.end());
          continue; // the options below do not interact with the mask: one head-dim sweep each
        }
        out.insert(out.end(), e4m3_qk.begin(), e4m3_qk.end());
        if (r == Route::DirectP) {
          // The other classifiers change the generated code (and the cheap affine one is the
          // Hopper speed candidate): they must compile too.
          for (ClassifierKind k : {ClassifierKind::Threshold, ClassifierKind::Affine, ClassifierKind::Mixed,
                                   ClassifierKind::Piecewise}) {
            if (k == s.attention.classifier.kind)
              continue;
            KernelSpec c = s;
            c.attention.classifier.kind = k;
            out.push_back(c);
          }
        }
        if (r != Route::Bf16 && !isTcgen05Attention(s)) { // register-P key order: mma.sync/wgmma only
          KernelSpec p = s;
          p.attention.operands.v_keys_permuted16 = true;
          out.push_back(p);
        }
        if (target == Target::Sm90a) {
          // The warp-specialized wgmma kernel: default tiles, other ring depths, 64-key tiles.
          const KernelSpec ws = withAttentionSchedule(s, AttentionSchedule::WgmmaWarpSpecialized);
          if (r != Route::Bf16) { // (the default wgmma kernel itself is pushed above)
            KernelSpec wp = ws;
            wp.attention.operands.v_keys_permuted16 = true;
            out.push_back(wp);
          }
          for (int stages : {1, 2}) {
            if (stages == ws.attention.tile.pipeline.stages)
              continue;
            KernelSpec w = ws;
            w.attention.tile.pipeline.stages = stages;
            w.attention.tile.pipeline.overlap = stages >= 2;
            w.attention.tile.pipeline.pingpong = w.attention.tile.pipeline.pingpong && stages >= 2;
            out.push_back(w);
          }
          for (KernelSpec &alt : wgmmaScheduleAlternatives(ws))
            out.push_back(std::move(alt));
          // the other key tile: 192 (V^T of two column blocks) or 128; three consumers have no room for
          // more keys (their two-consumer alternative is in wgmmaScheduleAlternatives)
          if (r != Route::Bf16 && d <= 128 && ws.attention.tile.shape.block_m == 128) {
            KernelSpec other = ws;
            other.attention.tile.shape.block_n = ws.attention.tile.shape.block_n == 192 ? 128 : 192;
            out.push_back(other);
          }
          if (r == Route::DirectP) { // each classifier is its own code path there
            // (the piecewise classifier forming y_h first: one of wgmmaScheduleAlternatives)
            for (ClassifierKind k : {ClassifierKind::Threshold, ClassifierKind::Affine}) {
              KernelSpec other = ws;
              other.attention.classifier.kind = k;
              if (llvm::errorToBool(validateSpec(other))) { // (the threshold classifier: 128 keys, two consumers)
                other.attention.tile.shape.block_n = 128;
                other.attention.tile.shape.block_m = 128;
                other.attention.tile.shape.warps = 12;
              }
              if (llvm::errorToBool(validateSpec(other))) // (and FP32 scores at D256)
                other = withScoresFp16(std::move(other), false);
              out.push_back(other);
            }
          }
          if (d == 128) { // the leave-one-out variants of `fa4jit bench --ablation`
            for (StageAblation ab : {StageAblation::SkipLoads, StageAblation::SkipQk, StageAblation::SkipSoftmax,
                                     StageAblation::SkipPv, StageAblation::SoftmaxTwice}) {
              KernelSpec v = ws;
              v.attention.tile.bench_ablation = ab;
              if (llvm::errorToBool(validateSpec(v))) { // (softmax-twice: two consumers, 128-key tiles)
                v.attention.tile.shape.block_n = 128;
                v.attention.tile.shape.block_m = 128;
                v.attention.tile.shape.warps = 12;
              }
              out.push_back(v);
            }
          }
          if (ws.attention.tile.shape.block_n == 128 || ws.attention.tile.shape.block_n == 80) { // 64-key tiles
            KernelSpec n64 = ws;
            n64.attention.tile.shape.block_n = 64;
            out.push_back(n64);
          }
        }
      }
  }
  for (KernelSpec &s : out) // (variants that moved the key tile or V's key order keep the quad blocks)
    s = keepingFitKeyBlocks(std::move(s));
  return out;
}

std::vector<KernelSpec> enumerateBackwardVariants(Target target) {
  std::vector<KernelSpec> out;
  if (target != Target::Sm90a || !backwardTemplatesAvailable())
    return out; // the backward kernels are sm_90a's (spec_validate)
  auto add = [&](const KernelSpec &v) {
    if (specViolations(v).empty() &&
        std::none_of(out.begin(), out.end(), [&](const KernelSpec &o) { return specsEqual(o, v); }))
      out.push_back(v);
  };
  for (BackwardMma mma : {BackwardMma::Wgmma, BackwardMma::MmaSync})
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        KernelSpec chosen = defaultBackwardSpec(d, causal, 0.0f, target);
        const decisions::BackwardChoice choice = decisions::backwardChoice(d, mma);
        chosen.backward.mma = choice.mma;
        chosen.backward.tile = choice.tile;
        add(chosen);
        if (causal)
          continue; // the choices below do not touch the mask
        KernelSpec v = chosen;
        v.backward.deterministic = true;
        add(v);
        v = chosen;
        v.backward.qk = BackwardQkOperands::SavedNvfp4;
        add(v);
        v = chosen; // MXFP4 P/V (32-query blocks: every chosen step is a multiple)
        v.backward.pv = BackwardPvFormat::Mxfp4;
        add(v);
        // Every other tile the rules admit (the MXFP4 variant also at a 32-query step).
        for (int warps : {2, 4, 8})
          for (int block_m : {16, 32, 64}) {
            v = chosen;
            v.backward.tile = TileShape{block_m, 16 * warps, warps};
            add(v);
          }
        v = chosen;
        v.backward.pv = BackwardPvFormat::Mxfp4;
        v.backward.tile = TileShape{32, 64, 4};
        add(v);
      }
  return out;
}

std::vector<KernelSpec> enumerateVariants(const std::vector<Target> &targets) {
  std::vector<Target> ts = targets;
  if (ts.empty())
    ts.assign(std::begin(kAllTargets), std::end(kAllTargets));
  std::vector<KernelSpec> out;
  for (Target t : ts) {
    for (KernelSpec &s : enumerateQuantizeVariants(t))
      out.push_back(std::move(s));
    for (KernelSpec &s : enumerateAttentionVariants(t))
      out.push_back(std::move(s));
    for (KernelSpec &s : enumerateBackwardVariants(t))
      out.push_back(std::move(s));
    for (KernelSpec &s : enumerateMergeVariants(t))
      out.push_back(std::move(s));
    for (KernelSpec &s : enumeratePagedKvVariants(t))
      out.push_back(std::move(s));
  }
  return out;
}

} // namespace fa4jit
