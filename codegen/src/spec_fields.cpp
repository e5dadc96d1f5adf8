// TileSpec's field table (spec_fields.h).
#include "fa4jit/codegen/spec_fields.h"

#include <iterator>

namespace fa4jit {
namespace {

// Accessors of one TileSpec member as an int (bools 0/1, enums by their underlying value).
#define FA4JIT_TILE_ACCESS(member)                                                                   \
  [](const TileSpec &t) { return static_cast<int>(t.member); },                                      \
      [](TileSpec &t, int v) { t.member = static_cast<decltype(t.member)>(v); }

using T = FieldType;
using B = FieldBaked;
using J = FieldJson;

// Canonical JSON order: append new rows at the end (see spec_fields.h).
const TileField kTileFields[] = {
    {"ablation", T::Ablation, false, B::Wgmma, J::UnlessDefault, FA4JIT_TILE_ACCESS(bench_ablation),
     "bench-only leave-one-out variant", {}},
    {"block_m", T::Int, false, B::Every, J::Always, FA4JIT_TILE_ACCESS(shape.block_m), "query rows per CTA",
     {{}, "rows", 64, 256}},
    {"block_n", T::Int, false, B::Every, J::Always, FA4JIT_TILE_ACCESS(shape.block_n), "keys per main-loop tile",
     {{}, "keys", 32, 256}},
    {"kv_multicast", T::Bool, true, B::Wgmma, J::UnlessDefault, FA4JIT_TILE_ACCESS(schedule.kv_multicast),
     "two-CTA clusters, each CTA loading half of every K/V stage into both", {{"multicast", "no-multicast"}}},
    {"kv_staging", T::KvStaging, true, B::Wgmma, J::Always, FA4JIT_TILE_ACCESS(staging.kv),
     "where K/V tiles are widened and how they reach shared memory",
     {{"in-kernel", "prewidened", "tensor-map"}}},
    {"mma_row_sum", T::Bool, true, B::Wgmma, J::Always, FA4JIT_TILE_ACCESS(softmax.mma_row_sum),
     "l summed by the PV wgmma (a ones row in V^T)", {{"mma-sum", "alu-sum"}}},
    {"overlap", T::Bool, true, B::Wgmma, J::Always, FA4JIT_TILE_ACCESS(pipeline.overlap),
     "softmax of tile j overlaps PV of tile j-1", {{"overlap", "serial"}}},
    {"persistent", T::Bool, true, B::Wgmma, J::UnlessDefault, FA4JIT_TILE_ACCESS(schedule.persistent),
     "at most one CTA per SM, each looping over work tiles", {{"persistent", "per-tile"}}},
    {"exp2_poly_tiles", T::Int, true, B::Wgmma, J::UnlessDefault, FA4JIT_TILE_ACCESS(softmax.exp2_poly_tiles),
     "n8 key tiles whose exp2 is an FP16 polynomial on the FMA pipe (nvfp8)", {{}, "poly", 0, 24}},
    {"fused_widening", T::Bool, true, B::Wgmma, J::UnlessDefault, FA4JIT_TILE_ACCESS(staging.fused_widening),
     "the producer's spare warps write the K/V and Q images (no widening passes)",
     {{"fused-widening", "widening-passes"}}},
    {"pieces_from_scores", T::Bool, true, B::Wgmma, J::UnlessDefault,
     FA4JIT_TILE_ACCESS(softmax.pieces_from_scores),
     "the piecewise classifier's pieces evaluated from S directly (directp)",
     {{"pieces-from-scores", "pieces-from-y"}}},
    {"pingpong", T::Bool, true, B::Wgmma, J::Always, FA4JIT_TILE_ACCESS(pipeline.pingpong),
     "consumers take turns issuing wgmmas", {{"pingpong", "no-pingpong"}}},
    {"scores_fp16", T::Bool, true, B::Wgmma, J::UnlessDefault, FA4JIT_TILE_ACCESS(softmax.scores_fp16),
     "QK^T accumulates S as FP16 pairs (the FP8-fed routes)", {{"fp16-scores", "fp32-scores"}}},
    {"thread_key_blocks", T::Bool, true, B::Wgmma, J::UnlessDefault, FA4JIT_TILE_ACCESS(softmax.thread_key_blocks),
     "each Direct-P block in one thread's S columns (keys ordered by the widening)",
     {{"thread-blocks", "quad-blocks"}}},
    {"schedule", T::Schedule, false, B::Never, J::Always, FA4JIT_TILE_ACCESS(schedule.kernel),
     "the kernel template", {}},
    {"stages", T::Int, false, B::Wgmma, J::Always, FA4JIT_TILE_ACCESS(pipeline.stages),
     "K/V shared-memory ring depth", {{}, "stages", 1, 4}},
    {"warps", T::Int, false, B::Every, J::Always, FA4JIT_TILE_ACCESS(shape.warps), "", {}},
};
#undef FA4JIT_TILE_ACCESS

// A field added to TileSpec needs its row above; this trips on any change of the struct's size.
static_assert(sizeof(TileSpec) == 40 && std::size(kTileFields) == 17,
              "TileSpec changed: give every field its row in kTileFields");

} // namespace

llvm::ArrayRef<TileField> tileFields() { return kTileFields; }

const TileField *benchVariantField(llvm::StringRef variant, int &value) {
  for (const TileField &f : kTileFields) {
    for (int i = 0; i < 3; ++i)
      if (f.bench.names[i] && variant == f.bench.names[i]) {
        value = f.type == FieldType::Bool ? (i == 0 ? 1 : 0) : i;
        return &f;
      }
    llvm::StringRef rest = variant;
    int n = 0;
    if (f.bench.prefix && rest.consume_front(f.bench.prefix) && !rest.getAsInteger(10, n) && n >= f.bench.lo &&
        n <= f.bench.hi) {
      value = n;
      return &f;
    }
  }
  return nullptr;
}

std::string fieldValueText(const TileField &f, int value) {
  switch (f.type) {
  case FieldType::Int: return std::to_string(value);
  case FieldType::Bool: return value ? "true" : "false";
  case FieldType::Schedule: return toString(static_cast<AttentionSchedule>(value));
  case FieldType::KvStaging: return toString(static_cast<KvStaging>(value));
  case FieldType::Ablation: return toString(static_cast<StageAblation>(value));
  }
  return "?";
}

} // namespace fa4jit
