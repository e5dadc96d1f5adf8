#include "bench_variants.h"

#include "accuracy_grid.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_fields.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>

namespace fa4jit::tools {

namespace {

llvm::Error unknown(llvm::StringRef name) {
  std::string names;
  for (const TileField &f : tileFields()) {
    for (const char *n : f.bench.names)
      if (n)
        names += std::string(n) + ", ";
    if (f.bench.prefix)
      names += std::string(f.bench.prefix) + std::to_string(f.bench.lo) + ".." + std::to_string(f.bench.hi) + ", ";
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown bench variant '%s' (%sslack0..slack8, piecewise, threshold, affine, "
                                 "skip-loads, skip-qk, skip-softmax, skip-pv, softmax-twice, default)",
                                 name.str().c_str(), names.c_str());
}

// "slackN", N in [0, 8]: the range guard's slack in log2 units (rescale O only when a tile's max
// passes the row max by more than N); nullopt for any other name.
std::optional<int> guardSlackVariant(llvm::StringRef name) {
  int n = 0;
  if (!name.consume_front("slack") || name.getAsInteger(10, n) || n < 0 || n > 8)
    return std::nullopt;
  return n;
}

bool isClassifierVariant(llvm::StringRef p) { return p == "threshold" || p == "affine" || p == "piecewise"; }

// What setting one tile field to `v` implies for the others, and whether the kernel can take it at
// all (false: the variant does not apply to this route or staging).
bool applyTileField(KernelSpec &s, const TileField &f, int v) {
  AttentionSpec &a = s.attention;
  TileSpec &t = a.tile;
  const llvm::StringRef name = f.name;
  if (name == "scores_fp16") { // (FP16 scores take the widening shift that keeps |S| finite)
    if (a.route == Route::Bf16)
      return false;
    s = withScoresFp16(std::move(s), v != 0);
    return true;
  }
  if (name == "exp2_poly_tiles") { // (the polynomial takes FP16 exponents)
    if (a.route != Route::Nvfp8)
      return false;
    if (!t.softmax.scores_fp16)
      s = withScoresFp16(std::move(s), true);
    a.tile.softmax.exp2_poly_tiles = v;
    return true;
  }
  if (name == "persistent" && v && t.staging.kv == KvStaging::InKernel)
    return false; // (the in-kernel producer is one CTA's)
  if (name == "kv_multicast" && v && t.staging.kv != KvStaging::Prewidened)
    return false;
  if (name == "thread_key_blocks" && a.route != Route::DirectP)
    return false;
  if (name == "pieces_from_scores" &&
      (a.route != Route::DirectP || !t.softmax.scores_fp16 || a.classifier.kind != ClassifierKind::Piecewise))
    return false;
  if (name == "fused_widening" && (a.route == Route::Bf16 || !t.schedule.persistent ||
                                    t.staging.kv != KvStaging::Prewidened || t.schedule.kv_multicast))
    return false;
  const bool bf16 = a.route == Route::Bf16;
  if (name == "kv_staging" && ((v == static_cast<int>(KvStaging::InKernel) && bf16) ||
                               (v == static_cast<int>(KvStaging::TensorMap) && !bf16)))
    return false; // (bf16 tiles are never widened in the kernel; tensor maps read bf16 tensors only)
  if (name == "block_m" && v == 192 && t.staging.kv == KvStaging::InKernel)
    return false; // (three consumers leave the in-kernel producer one thread)
  if (name == "stages" && v < 2 && t.pipeline.overlap)
    return false;
  f.set(t, v);
  if (name == "overlap") // (the serial loop's turns: `pingpong` after it)
    t.pipeline.pingpong = t.pipeline.pingpong && t.pipeline.overlap;
  if (name == "block_m") // one producer warpgroup beside block_m / 64 consumers
    t.shape.warps = v / 16 + 4;
  if (name == "kv_staging")
    t.schedule.persistent = t.schedule.persistent && t.staging.kv != KvStaging::InKernel;
  if (name == "persistent" || name == "kv_staging")
    t.schedule.kv_multicast = t.schedule.kv_multicast && t.schedule.persistent;
  if (name == "kv_multicast") // (multicast runs on the persistent grid)
    t.schedule.persistent = t.schedule.persistent || t.schedule.kv_multicast;
  return true;
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
      int value = 0;
      if (p == "default" || isClassifierVariant(p) || benchVariantField(p, value) || guardSlackVariant(p))
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
  const bool wgmma = a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized;
  for (llvm::StringRef p : parts(variant)) {
    int value = 0;
    if (p == "default")
      continue;
    if (const TileField *f = benchVariantField(p, value)) { // every tile variant is the wgmma kernel's
      if (!wgmma || !applyTileField(s, *f, value))
        return std::nullopt;
    } else if (const std::optional<int> slack = guardSlackVariant(p)) {
      setGuardSlack(a, static_cast<float>(*slack));
    } else if (isClassifierVariant(p)) {
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
      a.tile.bench_ablation = *ab;
    }
  }
  // The 192-key default (directp) cannot take the threshold classifier or softmax-twice (they
  // spill there): such a variant runs on 128-key tiles unless it names its keys; the three-consumer
  // default (D64) cannot take the threshold classifier: such a variant runs on two consumers unless
  // it names its rows.
  bool names_keys = false, names_rows = false, names_blocks = false;
  for (llvm::StringRef p : parts(variant)) {
    int value = 0;
    const TileField *f = benchVariantField(p, value);
    const llvm::StringRef field = f ? f->name : "";
    names_keys = names_keys || field == "block_n";
    names_rows = names_rows || field == "block_m";
    names_blocks = names_blocks || p == "thread-blocks";
  }
  // A variant that moves the key tile off 128 (or V's key order) keeps the quad blocks where the
  // default has thread blocks, unless it names them.
  if (!names_blocks)
    s = keepingFitKeyBlocks(std::move(s));
  if (!names_keys && a.tile.shape.block_n == 192 && llvm::errorToBool(validateSpec(s)))
    a.tile.shape.block_n = 128;
  if (!names_rows && a.tile.shape.block_m == 192 && llvm::errorToBool(validateSpec(s))) {
    a.tile.shape.block_m = 128;
    a.tile.shape.warps = 12;
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
