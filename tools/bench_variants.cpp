#include "bench_variants.h"

#include "accuracy_grid.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>

namespace fa4jit::tools {

namespace {

llvm::Error unknown(llvm::StringRef name) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown bench variant '%s' (serial, overlap, pingpong, no-pingpong, in-kernel, prewidened, tensor-map, mma-sum, alu-sum, persistent, per-tile, fused-widening, widening-passes, multicast, no-multicast, thread-blocks, quad-blocks, fp16-scores, fp32-scores, pieces-from-scores, pieces-from-y, poly0..poly24, stages1..stages4, keys64/80/96/128/192, rows128/192, slack0..slack8, piecewise, threshold, affine, skip-loads, "
                                 "skip-qk, skip-softmax, skip-pv, softmax-twice, default)",
                                 name.str().c_str());
}

// "stagesN", N in [1, 4]: the wgmma ring depth; nullopt for any other name.
std::optional<int> ringDepthVariant(llvm::StringRef name) {
  int n = 0;
  if (!name.consume_front("stages") || name.getAsInteger(10, n) || n < 1 || n > 4)
    return std::nullopt;
  return n;
}

// "keys64", "keys80", "keys96", "keys128", "keys192": the wgmma kernel's block_n (keys per tile).
std::optional<int> blockKeysVariant(llvm::StringRef name) {
  int n = 0;
  if (!name.consume_front("keys") || name.getAsInteger(10, n) || (n != 64 && n != 80 && n != 96 && n != 128 && n != 192))
    return std::nullopt;
  return n;
}

// "slackN", N in [0, 4]: the range guard's slack in log2 units (rescale O only when a tile's max
// passes the row max by more than N); nullopt for any other name.
std::optional<int> guardSlackVariant(llvm::StringRef name) {
  int n = 0;
  if (!name.consume_front("slack") || name.getAsInteger(10, n) || n < 0 || n > 8)
    return std::nullopt;
  return n;
}

// "polyN", N in [0, 24]: nvfp8's exp2 of the first N n8 key tiles of each tile as the FP16
// polynomial (TileSpec::exp2_poly_tiles; the variant takes FP16 scores, which it needs).
std::optional<int> exp2PolyVariant(llvm::StringRef name) {
  int n = 0;
  if (!name.consume_front("poly") || name.getAsInteger(10, n) || n < 0 || n > 24)
    return std::nullopt;
  return n;
}

// rows128 | rows192: query rows per wgmma CTA (two or three consumer warpgroups).
std::optional<int> blockRowsVariant(llvm::StringRef name) {
  int m = 0;
  if (!name.consume_front("rows") || name.getAsInteger(10, m) || (m != 128 && m != 192))
    return std::nullopt;
  return m;
}

llvm::SmallVector<llvm::StringRef, 4> parts(llvm::StringRef variant) {
  llvm::SmallVector<llvm::StringRef, 4> out;
  variant.split(out, '+', -1, false);
  return out;
}

} // namespace

llvm::Error checkBenchVariants(const std::vector<std::string> &variants) {
  for (const std::string &v : variants)
    for (llvm::StringRef p : parts(v)) {
      if (p == "default" || p == "serial" || p == "overlap" || p == "threshold" || p == "affine" || p == "piecewise" ||
          p == "in-kernel" || p == "prewidened" || p == "tensor-map" || p == "pingpong" || p == "no-pingpong" ||
          p == "mma-sum" || p == "alu-sum" || p == "persistent" || p == "per-tile" || p == "multicast" ||
          p == "no-multicast" || p == "thread-blocks" || p == "quad-blocks" || p == "fp16-scores" ||
          p == "fp32-scores" || p == "pieces-from-scores" || p == "pieces-from-y" || p == "fused-widening" ||
          p == "widening-passes")
        continue;
      if (ringDepthVariant(p) || blockKeysVariant(p) || blockRowsVariant(p) || guardSlackVariant(p) ||
          exp2PolyVariant(p))
        continue;
      auto ab = parseStageAblation(p);
      if (!ab) {
        llvm::consumeError(ab.takeError());
        return unknown(p);
      }
    }
  return llvm::Error::success();
}

llvm::Expected<std::optional<KernelSpec>> applyBenchVariant(const KernelSpec &base, const std::string &variant,
                                                            int seqlen, bool causal) {
  KernelSpec s = base;
  AttentionSpec &a = s.attention;
  const bool wgmma = a.tile.schedule == AttentionSchedule::WgmmaWarpSpecialized;
  for (llvm::StringRef p : parts(variant)) {
    if (p == "default")
      continue;
    if (p == "serial" || p == "overlap") {
      if (!wgmma)
        return std::nullopt;
      a.tile.overlap = p == "overlap";
      a.tile.pingpong = a.tile.pingpong && a.tile.overlap; // (the serial loop's turns: `pingpong` after it)
    } else if (p == "pingpong" || p == "no-pingpong") {
      if (!wgmma)
        return std::nullopt;
      a.tile.pingpong = p == "pingpong";
    } else if (p == "persistent" || p == "per-tile") {
      if (!wgmma || (p == "persistent" && a.tile.kv_staging == KvStaging::InKernel))
        return std::nullopt;
      a.tile.persistent = p == "persistent";
      a.tile.kv_multicast = a.tile.kv_multicast && a.tile.persistent;
    } else if (p == "multicast" || p == "no-multicast") {
      // (multicast runs on the persistent grid: it turns that on where the default has it off)
      if (!wgmma || (p == "multicast" && a.tile.kv_staging != KvStaging::Prewidened))
        return std::nullopt;
      a.tile.kv_multicast = p == "multicast";
      a.tile.persistent = a.tile.persistent || a.tile.kv_multicast;
    } else if (p == "thread-blocks" || p == "quad-blocks") {
      if (!wgmma || a.route != Route::DirectP)
        return std::nullopt;
      a.tile.thread_key_blocks = p == "thread-blocks";
    } else if (p == "fp16-scores" || p == "fp32-scores") {
      // (FP16 scores take the widening shift that keeps |S| finite)
      if (!wgmma || a.route == Route::Bf16)
        return std::nullopt;
      s = withScoresFp16(std::move(s), p == "fp16-scores");
    } else if (const std::optional<int> poly = exp2PolyVariant(p)) {
      if (!wgmma || a.route != Route::Nvfp8)
        return std::nullopt;
      if (!a.tile.scores_fp16)
        s = withScoresFp16(std::move(s), true);
      a.tile.exp2_poly_tiles = *poly;
    } else if (p == "pieces-from-scores" || p == "pieces-from-y") {
      // (directp's piecewise classifier on FP16 scores only)
      if (!wgmma || a.route != Route::DirectP || !a.tile.scores_fp16 || a.classifier.kind != ClassifierKind::Piecewise)
        return std::nullopt;
      a.tile.pieces_from_scores = p == "pieces-from-scores";
    } else if (p == "fused-widening" || p == "widening-passes") {
      // (the persistent grid's prewidened images, FP8-fed routes: by its spare producer warps or
      // by the passes before it)
      if (!wgmma || a.route == Route::Bf16 || !a.tile.persistent || a.tile.kv_staging != KvStaging::Prewidened ||
          a.tile.kv_multicast)
        return std::nullopt;
      a.tile.fused_widening = p == "fused-widening";
    } else if (p == "mma-sum" || p == "alu-sum") {
      if (!wgmma)
        return std::nullopt;
      a.tile.mma_row_sum = p == "mma-sum";
    } else if (p == "in-kernel" || p == "prewidened" || p == "tensor-map") {
      // bf16 tiles are never widened in-kernel; tensor maps read the bf16 route's own tensors
      if (!wgmma || (p == "in-kernel" && a.route == Route::Bf16) || (p == "tensor-map" && a.route != Route::Bf16))
        return std::nullopt;
      a.tile.kv_staging = p == "prewidened" ? KvStaging::Prewidened
                          : p == "tensor-map" ? KvStaging::TensorMap
                                              : KvStaging::InKernel;
      a.tile.persistent = a.tile.persistent && a.tile.kv_staging != KvStaging::InKernel;
      a.tile.kv_multicast = a.tile.kv_multicast && a.tile.persistent;
    } else if (const std::optional<int> m = blockRowsVariant(p)) {
      if (!wgmma || (*m == 192 && a.tile.kv_staging == KvStaging::InKernel))
        return std::nullopt;
      a.tile.block_m = *m;
      a.tile.warps = *m / 16 + 4;
    } else if (const std::optional<int> n = blockKeysVariant(p)) {
      if (!wgmma)
        return std::nullopt;
      a.tile.block_n = *n;
    } else if (const std::optional<int> slack = guardSlackVariant(p)) {
      setGuardSlack(a, static_cast<float>(*slack));
    } else if (const std::optional<int> depth = ringDepthVariant(p)) {
      if (!wgmma || (*depth < 2 && a.tile.overlap))
        return std::nullopt;
      a.tile.stages = *depth;
    } else if (p == "threshold" || p == "affine" || p == "piecewise") {
      if (a.route != Route::DirectP)
        return std::nullopt;
      // The tuner's fit (Gaussian scores of unit variance, the shape's length up to 4096 keys).
      auto c = classifierForVariant(p.str(), 1.0, std::min(seqlen, 4096), causal, 0x5eed);
      if (!c)
        return c.takeError();
      a.classifier = *c;
    } else {
      auto ab = parseStageAblation(p);
      if (!ab)
        return ab.takeError();
      if (!wgmma)
        return std::nullopt;
      a.tile.ablation = *ab;
    }
  }
  // The 192-key default (directp) cannot take the threshold classifier or softmax-twice (they
  // spill there): such a variant runs on 128-key tiles unless it names its keys; the three-consumer
  // default (D64) cannot take the threshold classifier: such a variant runs on two consumers unless
  // it names its rows.
  bool names_keys = false, names_rows = false, names_blocks = false;
  for (llvm::StringRef p : parts(variant)) {
    names_keys = names_keys || blockKeysVariant(p).has_value();
    names_rows = names_rows || blockRowsVariant(p).has_value();
    names_blocks = names_blocks || p == "thread-blocks";
  }
  // A variant that moves the key tile off 128 (or V's key order) keeps the quad blocks where the
  // default has thread blocks, unless it names them.
  if (!names_blocks)
    s = keepingFitKeyBlocks(std::move(s));
  if (!names_keys && a.tile.block_n == 192 && llvm::errorToBool(validateSpec(s)))
    a.tile.block_n = 128;
  if (!names_rows && a.tile.block_m == 192 && llvm::errorToBool(validateSpec(s))) {
    a.tile.block_m = 128;
    a.tile.warps = 12;
  }
  // A variant this shape cannot take (a ring too deep for its tiles' shared memory) is skipped
  // like an inapplicable one.
  if (llvm::Error e = validateSpec(s)) {
    llvm::consumeError(std::move(e));
    return std::nullopt;
  }
  return std::optional<KernelSpec>(s);
}

} // namespace fa4jit::tools
