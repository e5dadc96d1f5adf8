// sm_90a decision table: the wgmma kernel's tiles and schedule per (route, head dim, causal), and
// the defaults that change with the number of keys. Each cell is written once; the reasons for a
// column stand above the table, each with the `fa4jit bench` call that shows it on the H200
// (`--route R --head-dim D --seqlen 4096,16384,32768 --causal 0|1 --variants default,V`).
#include "decisions.h"

#include <iterator>

#include "fa4jit/codegen/spec_fields.h"

namespace fa4jit::decisions {
namespace {

// Columns, and why each takes its values:
//  rows (block_m): two consumer warpgroups (128 query rows) or three (192). Three where a score
//    leaves issue slots idle: at D64 a score costs half the MMA time of D128 for the same softmax,
//    and a third warp per scheduler issues while the other two wait on their dependency chains
//    (D64 +9-31%; `rows128`). The FP8-fed routes at D128 and bf16 at non-causal D128 too (+2-18%);
//    at D256, O of 128 registers leaves room for two only.
//  keys (block_n): the widest tile that fits the registers beside O without spilling: 128 keys halve
//    the shared-memory bytes per FLOP of 64 (D256 FP8-fed +11-20%, `keys64`); directp and nvfp8 at
//    D128 take 128 on three consumers because their FP16 scores take half the registers (+16%,
//    `keys96`); bf16 at non-causal D128 takes 64 on three consumers (+2-3% over 128 on two); bf16 at
//    D256 takes 80 (two 80 KiB stages beside 64 KiB of Q, FlashAttention-3's tile).
//  st (stages): the K/V ring depth: 3 at D <= 128 (+13-16% over 2 for bf16, `stages2`), 2 at D256
//    (three stages do not fit shared memory).
//  ovl (overlap): tile j's softmax under tile j-1's PV at D <= 128; at D256 the serial loop is faster
//    (nvfp8 +13%, directp +15%, bf16 0-25%; `overlap`): P of two tiles beside a 256-wide O spills.
//  pp (pingpong): consumers take turns on the tensor core: +3-8% at non-causal D <= 128 and for
//    bf16's serial D256 loop (+4-7%); causal and the FP8-fed D256 loop lose 1-9% (`pingpong`).
//  pers (persistent): one CTA per SM looping over work tiles, the next tile's Q and K/V loads under
//    the current tile's tail: non-causal +5-8% at 4k keys (`per-tile`). Causal grids by length:
//    kLengthRules below.
//  fuse (fused_widening): the persistent grid's spare producer warps write the K/V and Q images
//    instead of two passes before it (a fixed ~94 us at D128): D256 +11-13% at 4k keys, nvfp8 at
//    non-causal D128 +4%; the issue-bound kernels (directp at D64/D128, every D64) lose as much as
//    the passes cost (`widening-passes`). Inert where the grid is not persistent.
//  rsum (mma_row_sum): the FP8-fed routes at D <= 128 let the PV wgmma sum l through a ones row
//    (+5-9% for nvfp8, `alu-sum`); N = D + 8 must stay <= 256, so not at D256.
//  f16 (scores_fp16): the FP8-fed QK^T accumulates S in FP16, one HFMA2 per pair of keys for the
//    softmax's input: directp +5-22% at every head dim, nvfp8 +5-8% at D128 and non-causal D256;
//    nvfp8 loses 11-14% at D64 and 3% at causal D256 (`fp32-scores`).
//  pcs (pieces_from_scores): directp's piecewise pieces read S directly, one HFMA2 fewer per pair
//    (+1-5%, `pieces-from-y`).
//  tkb (thread_key_blocks): directp on 128-key tiles keeps each 32-key block in one thread's S
//    columns (D64 +12-14%, D256 +4%; `quad-blocks`).
//  poly (exp2_poly_tiles): nvfp8 at non-causal D256 takes half of each tile's exp2 on the FMA pipe
//    as an FP16 polynomial (+2-8%, `poly0`); at D64 and D128 the MUFU does not bound the kernel
//    (0 to -9%, `poly8`).
struct Sm90Row {
  Route route;
  int head_dim;
  bool causal;
  int block_m, block_n, stages;
  bool overlap, pingpong, persistent, fused_widening, mma_row_sum, scores_fp16, pieces_from_scores,
      thread_key_blocks;
  int exp2_poly_tiles;
};

constexpr Route B = Route::Bf16, N = Route::Nvfp8, P = Route::DirectP;
constexpr Sm90Row kSm90Rows[] = {
    // route  D  causal  rows keys st  ovl    pp     pers   fuse   rsum   f16    pcs    tkb    poly
    {B, 64, false, 192, 128, 3, true, true, true, false, false, false, false, false, 0},
    {B, 64, true, 192, 128, 3, true, false, false, false, false, false, false, false, 0},
    {B, 128, false, 192, 64, 3, true, true, true, false, false, false, false, false, 0},
    {B, 128, true, 128, 128, 3, true, false, false, false, false, false, false, false, 0},
    {B, 256, false, 128, 80, 2, false, true, true, false, false, false, false, false, 0},
    {B, 256, true, 128, 80, 2, false, true, false, false, false, false, false, false, 0},
    {N, 64, false, 192, 128, 3, true, true, true, false, true, false, false, false, 0},
    {N, 64, true, 192, 128, 3, true, false, false, false, true, false, false, false, 0},
    {N, 128, false, 192, 128, 3, true, true, true, true, true, true, false, false, 0},
    {N, 128, true, 192, 128, 3, true, false, false, false, true, true, false, false, 0},
    {N, 256, false, 128, 128, 2, false, false, true, true, false, true, false, false, 8},
    {N, 256, true, 128, 128, 2, false, false, false, true, false, false, false, false, 0},
    {P, 64, false, 192, 128, 3, true, true, true, false, true, true, true, true, 0},
    {P, 64, true, 192, 128, 3, true, false, false, false, true, true, true, true, 0},
    {P, 128, false, 192, 128, 3, true, true, true, false, true, true, true, true, 0},
    {P, 128, true, 192, 128, 3, true, false, false, false, true, true, true, true, 0},
    {P, 256, false, 128, 128, 2, false, false, true, true, false, true, true, true, 0},
    {P, 256, true, 128, 128, 2, false, false, false, true, false, true, true, true, 0},
};

// Defaults that change with the number of keys: up to max_keys the field takes `within` (-1: the
// table's value), beyond it `beyond`.
struct LengthRule {
  Route route;
  bool any_route;
  bool causal_only;
  int max_keys;
  const char *field; // a row of the field table (spec_fields.h)
  int within, beyond;
};
constexpr LengthRule kLengthRules[] = {
    // Causal work tiles are as long as their rows' keys: the persistent grid that hands them out at
    // run time saves each a CTA launch (FP8-fed +9-22% at 4k keys), one CTA per work tile runs the
    // long main loops up to 9% faster at 32k (`per-tile`, `persistent` with --causal 1).
    {N, false, true, 8192, "persistent", 1, 0},
    {P, false, true, 8192, "persistent", 1, 0},
    {B, false, true, 4096, "persistent", 1, 0}, // (bf16 8k keys: -2 to -6%)
    // nvfp8 widens in the kernel up to 4k keys: what it saves is the passes' fixed cost, and beyond
    // it measured 1-3% slower (`widening-passes` at 8k and 32k keys).
    {N, false, false, 4096, "fused_widening", -1, 0},
};

const Sm90Row *findRow(Route route, int head_dim, bool causal) {
  for (const Sm90Row &r : kSm90Rows)
    if (r.route == route && r.head_dim == head_dim && r.causal == causal)
      return &r;
  return nullptr;
}

const TileField &field(const char *name) {
  for (const TileField &f : tileFields())
    if (llvm::StringRef(f.name) == name)
      return f;
  __builtin_unreachable(); // (kLengthRules name fields of the table)
}

} // namespace

bool sm90WgmmaTiles(Route route, int head_dim, bool causal, TileSpec &t) {
  const Sm90Row *r = findRow(route, head_dim, causal);
  if (!r)
    return false;
  t.schedule.kernel = AttentionSchedule::WgmmaWarpSpecialized;
  t.shape.block_m = r->block_m;
  t.shape.block_n = r->block_n;
  t.shape.warps = r->block_m / 16 + 4; // one producer warpgroup beside block_m / 64 consumers
  t.pipeline.stages = r->stages;
  t.pipeline.overlap = r->overlap;
  t.pipeline.pingpong = r->pingpong;
  t.schedule.persistent = r->persistent;
  t.schedule.kv_multicast = false; // (wrong rows on the H200: spec_validate refuses it)
  // bf16 tiles come by TMA tensor maps straight from the BF16 tensors (a repacking pass took 21% of
  // the D128 4k forward, `prewidened`); FP4 K/V are widened once per forward and copied in bulk
  // (widening in every CTA's producer capped the kernel at 0.3-0.5x cuDNN, `in-kernel`).
  t.staging.kv = route == Route::Bf16 ? KvStaging::TensorMap : KvStaging::Prewidened;
  t.staging.fused_widening = r->fused_widening;
  t.softmax.mma_row_sum = r->mma_row_sum;
  t.softmax.scores_fp16 = r->scores_fp16;
  t.softmax.pieces_from_scores = r->pieces_from_scores;
  t.softmax.thread_key_blocks = r->thread_key_blocks;
  t.softmax.exp2_poly_tiles = r->exp2_poly_tiles;
  return true;
}

void applyLengthRules(Route route, bool causal, int seqlen_k, TileSpec &t) {
  for (const LengthRule &rule : kLengthRules) {
    if ((!rule.any_route && rule.route != route) || (rule.causal_only && !causal))
      continue;
    const int value = seqlen_k <= rule.max_keys ? rule.within : rule.beyond;
    if (value >= 0)
      field(rule.field).set(t, value);
  }
}

} // namespace fa4jit::decisions
