// Operand formats as the sm_100a tensor core consumes them, and the column arithmetic of
// tensor-memory scale factors.
#include "fa4jit/codegen/tmem_planner.h"

#include <cassert>

namespace fa4jit::tmem {

int bits(OperandFormat f) {
  switch (f) {
  case OperandFormat::Bf16: return 16;
  case OperandFormat::Fp8E4m3: return 8;
  case OperandFormat::Nvfp4:
  case OperandFormat::Mxfp4: return 4;
  }
  return 0;
}

int scaleVecSize(OperandFormat f) {
  switch (f) {
  case OperandFormat::Nvfp4: return 16; // UE4M3 per 16 (mxf4nvf4 scale_vec::4X)
  case OperandFormat::Mxfp4: return 32; // UE8M0 per 32 (mxf4 scale_vec::2X)
  case OperandFormat::Bf16:
  case OperandFormat::Fp8E4m3: return 0;
  }
  return 0;
}

const char *toString(OperandFormat f) {
  switch (f) {
  case OperandFormat::Bf16: return "bf16";
  case OperandFormat::Fp8E4m3: return "e4m3";
  case OperandFormat::Nvfp4: return "nvfp4";
  case OperandFormat::Mxfp4: return "mxfp4";
  }
  return "?";
}

const char *toString(SfPlacement p) {
  switch (p) {
  case SfPlacement::Auto: return "auto";
  case SfPlacement::Dedicated: return "dedicated";
  case SfPlacement::PvInScoreGap: return "pv-in-score-gap";
  case SfPlacement::InScoreGap: return "in-score-gap";
  }
  return "?";
}

const char *toString(RegionKind k) {
  switch (k) {
  case RegionKind::Scores: return "scores";
  case RegionKind::Output: return "output";
  case RegionKind::Probabilities: return "probabilities";
  case RegionKind::ScaleFactors: return "scale-factors";
  case RegionKind::SpareScores: return "spare-scores";
  }
  return "?";
}

OperandFormats defaultOperandFormats(Route route) {
  switch (route) {
  case Route::Bf16: return {OperandFormat::Bf16, OperandFormat::Bf16, OperandFormat::Bf16};
  // V carries one scale per head, applied to O outside the MMA: PV is a plain kind::f8f6f4.
  case Route::Nvfp8: return {OperandFormat::Nvfp4, OperandFormat::Fp8E4m3, OperandFormat::Fp8E4m3};
  case Route::DirectP: return {OperandFormat::Nvfp4, OperandFormat::Mxfp4, OperandFormat::Mxfp4};
  }
  return {};
}

// Layout facts (sources):
//  - CUTLASS tmem_sf_frg (include/cute/atom/mma_traits_sm100.hpp): scale factors of an MMA
//    operand are replicated across the four 32-lane subpartitions ("Data is always replicated
//    across subpartitions"); rows m0 + 32*m1 of a 128-row tile sit in lane m0, column m1, and one
//    32-bit column holds four consecutive scales along K. So 128 rows x 4 scales = 4 columns.
//  - CUTLASS dense_blockscaled_gemm_persistent.py: num_sfa_tmem_cols = (tile_m / 32) *
//    mma_inst_tile_k and num_sfb_tmem_cols = (round_up(tile_n, 128) / 32) * mma_inst_tile_k,
//    i.e. M/32 columns per K=64 MMA, with SFB's N rounded up to 128; "CUTLASS places them after
//    the accumulators" (and overlaps them into the accumulator when N = 256 fills TMEM).
//  - A public FA4 block-scaled fork (flash_fwd_sm100.py, qk_blockscaled) takes 8 columns for
//    the SFQ of a D = 128 tile at vec 16 and 4 at vec 32: scales packed four per column, two
//    K=64 MMAs of scale_vec::2X sharing a column through the SF id.
// We count packed columns like that fork: 4 columns per 128 rows per 4 scales along K.
int scaleFactorColumns(int mn, int k_extent, int scale_vec) {
  assert(mn > 0 && k_extent > 0 && scale_vec > 0 && k_extent % scale_vec == 0);
  const int row_groups = (mn + 127) / 128;            // 128-row atoms (SFB's N rounds up to 128)
  const int scales = k_extent / scale_vec;            // scales per row
  const int scale_groups = (scales + 3) / 4;          // four 8-bit scales per 32-bit column
  return row_groups * 4 * scale_groups;
}

int allocationColumns(int columns) {
  if (columns > kCapacityColumns)
    return 0;
  int a = kMinAllocColumns;
  while (a < columns)
    a *= 2;
  return a;
}

} // namespace fa4jit::tmem
