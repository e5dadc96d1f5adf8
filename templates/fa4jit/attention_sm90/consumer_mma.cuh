#pragma once
// A consumer warpgroup's warpgroup MMAs per route: S = Q K^T and O (+)= P V^T with P from
// registers, FP8 (k32) or BF16 (k16) wgmma, and the register shapes they imply (P's k-steps, O's
// tiles with the row-sum column of mma_row_sum).
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/smem_desc.cuh"
#include "fa4jit/attention_sm90/wgmma.cuh"
#include "fa4jit/attention_sm90/wgmma_bf16.cuh"
#include "fa4jit/attention_sm90/wgmma_fp16acc.cuh"

namespace fa4jit::device::attention_sm90 {

// The P register operand of PV: k-steps of 32 keys (E4M3, k32) or 16 keys (BF16, k16), four
// registers each; either way one k-step is 32 bytes of a K-major shared-memory row.
template <class C> struct POperand {
  static constexpr bool kBf16 = C::route == attention::Route::Bf16;
  static constexpr int kSteps = C::block_n / (kBf16 ? 16 : 32);
  static constexpr int kQkSteps = C::head_dim / (kBf16 ? 16 : 32); // k-steps of QK^T
};

// A consumer's O accumulator: head_dim / 8 n8 tiles, and with mma_row_sum one more whose column 0
// is l (the PV product with V^T's ones row).
template <class C> struct OAccumulator {
  static constexpr int kTiles = C::head_dim / 8 + (C::mma_row_sum ? 1 : 0);
};

// The tensor-map kernel's V tile [block_n keys][D] (bf16, kv_tensor_map), as the N-major B
// operand of PV (PTX "matrix descriptor", CUTLASS's canonical MN-major SW128 layout): 64 values
// of D contiguous per 128-byte row, the next 64 at the leading byte offset (the next column
// block: block_n rows on), the next 8 keys at the stride byte offset (1024: 8 rows on, as in every
// operand of this path). A k-step of 16 keys starts 16 rows on. `v_lo` carries the K-major
// tiles' leading byte offset field of 1 (sw128DescriptorLo), replaced here.
template <int kBlockN> FA4JIT_DEVICE uint64_t nMajorValueDescriptor(uint32_t v_lo, int kb) {
  constexpr uint32_t kLeadingOffset = kBlockN * kSwizzleBytes >> 4;
  static_assert(kLeadingOffset < (1u << 14), "the leading byte offset field has 14 bits");
  return sw128Descriptor(v_lo + ((kLeadingOffset - 1u) << 16) + (kb * 16 * kSwizzleBytes >> 4));
}

// O (+)= P V for one consumer: P A fragments per k-step, V^T tile [D][block_n] (kb = k-step) whose
// descriptor low word is v_lo (smem_desc.cuh); with kv_tensor_map V [block_n][D], read N-major.
template <class C, int kHeadDim, int kBlockN>
FA4JIT_DEVICE void issuePV(float (&o)[OAccumulator<C>::kTiles][4], const uint32_t (&pa)[POperand<C>::kSteps][4],
                           uint32_t v_lo) {
  static_assert(!C::kv_tensor_map || POperand<C>::kBf16, "tensor maps: the bf16 route");
  constexpr int kTransB = C::kv_tensor_map ? 1 : 0; // V [keys][D] read N-major
#pragma unroll
  for (int kb = 0; kb < POperand<C>::kSteps; ++kb) {
    // V^T's column blocks hold head_dim rows, and the row-sum rows with mma_row_sum (layout.cuh).
    const uint64_t desc = C::kv_tensor_map
                              ? nMajorValueDescriptor<kBlockN>(v_lo, kb)
                              : operandDescriptor<kHeadDim + (C::mma_row_sum ? kRowSumRows : 0)>(v_lo, 0, kb);
    if constexpr (C::mma_row_sum) { // N = head_dim + 8: V^T's rows continue into the row-sum rows
      if constexpr (kHeadDim == 64)
        sm90_wgmma_m64n72k32_f32_e4m3_rs(o, pa[kb], desc, 1);
      else
        sm90_wgmma_m64n136k32_f32_e4m3_rs(o, pa[kb], desc, 1);
    } else if constexpr (POperand<C>::kBf16) {
      if constexpr (kHeadDim == 64)
        sm90_wgmma_m64n64k16_f32_bf16_rs<kTransB>(o, pa[kb], desc, 1);
      else if constexpr (kHeadDim == 128)
        sm90_wgmma_m64n128k16_f32_bf16_rs<kTransB>(o, pa[kb], desc, 1);
      else
        sm90_wgmma_m64n256k16_f32_bf16_rs<kTransB>(o, pa[kb], desc, 1);
    } else {
      if constexpr (kHeadDim == 64)
        sm90_wgmma_m64n64k32_f32_e4m3_rs(o, pa[kb], desc, 1);
      else if constexpr (kHeadDim == 128)
        sm90_wgmma_m64n128k32_f32_e4m3_rs(o, pa[kb], desc, 1);
      else
        sm90_wgmma_m64n256k32_f32_e4m3_rs(o, pa[kb], desc, 1);
    }
  }
}

// One k-step of S = Q K^T; the first (kk == 0) overwrites S through write-only operands: the
// softmax's in-place writes to S's registers then feed no wgmma, which ptxas would otherwise
// serialize (C7513) whenever another wgmma is in flight during that softmax.
template <class C, int kBlockN>
FA4JIT_DEVICE void issueQKStep(float (&s)[kBlockN / 8][4], uint64_t a, uint64_t b, int kk) {
  if constexpr (POperand<C>::kBf16) {
    if constexpr (kBlockN == 64) {
      if (kk == 0)
        sm90_wgmma_m64n64k16_f32_bf16_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n64k16_f32_bf16_ss(s, a, b, 1);
    } else if constexpr (kBlockN == 80) {
      if (kk == 0)
        sm90_wgmma_m64n80k16_f32_bf16_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n80k16_f32_bf16_ss(s, a, b, 1);
    } else {
      static_assert(kBlockN == 128, "BF16 QK^T tiles of 64, 80 or 128 keys");
      if (kk == 0)
        sm90_wgmma_m64n128k16_f32_bf16_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n128k16_f32_bf16_ss(s, a, b, 1);
    }
  } else {
    if constexpr (kBlockN == 64) {
      if (kk == 0)
        sm90_wgmma_m64n64k32_f32_e4m3_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n64k32_f32_e4m3_ss(s, a, b, 1);
    } else if constexpr (kBlockN == 96) {
      if (kk == 0)
        sm90_wgmma_m64n96k32_f32_e4m3_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n96k32_f32_e4m3_ss(s, a, b, 1);
    } else if constexpr (kBlockN == 128) {
      if (kk == 0)
        sm90_wgmma_m64n128k32_f32_e4m3_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n128k32_f32_e4m3_ss(s, a, b, 1);
    } else {
      static_assert(kBlockN == 192, "FP8 QK^T tiles of 64, 96, 128 or 192 keys");
      if (kk == 0)
        sm90_wgmma_m64n192k32_f32_e4m3_ss_zero(s, a, b);
      else
        sm90_wgmma_m64n192k32_f32_e4m3_ss(s, a, b, 1);
    }
  }
}

// The same with FP16 accumulators (scores_fp16: S as FP16 pairs, wgmma_fp16acc.cuh).
template <class C, int kBlockN>
FA4JIT_DEVICE void issueQKStep(uint32_t (&s)[kBlockN / 8][2], uint64_t a, uint64_t b, int kk) {
  static_assert(!POperand<C>::kBf16, "FP16 scores: the FP8-fed QK^T");
  if constexpr (kBlockN == 64) {
    if (kk == 0)
      sm90_wgmma_m64n64k32_f16_e4m3_ss_zero(s, a, b);
    else
      sm90_wgmma_m64n64k32_f16_e4m3_ss(s, a, b, 1);
  } else if constexpr (kBlockN == 96) {
    if (kk == 0)
      sm90_wgmma_m64n96k32_f16_e4m3_ss_zero(s, a, b);
    else
      sm90_wgmma_m64n96k32_f16_e4m3_ss(s, a, b, 1);
  } else if constexpr (kBlockN == 128) {
    if (kk == 0)
      sm90_wgmma_m64n128k32_f16_e4m3_ss_zero(s, a, b);
    else
      sm90_wgmma_m64n128k32_f16_e4m3_ss(s, a, b, 1);
  } else {
    static_assert(kBlockN == 192, "FP8 QK^T tiles of 64, 96, 128 or 192 keys");
    if (kk == 0)
      sm90_wgmma_m64n192k32_f16_e4m3_ss_zero(s, a, b);
    else
      sm90_wgmma_m64n192k32_f16_e4m3_ss(s, a, b, 1);
  }
}

// S = Q K^T for one consumer's 64 rows into either form of score_tile.cuh: q_lo is the descriptor
// low word of the Q tile at the consumer's first row (consumerQDescriptorLo), k_lo the K tile's.
template <class C, int kHeadDim, int kBlockN, class Scores>
FA4JIT_DEVICE void issueQK(Scores &s, uint32_t q_lo, uint32_t k_lo) {
#pragma unroll
  for (int kk = 0; kk < POperand<C>::kQkSteps; ++kk) {
    const uint64_t a = operandDescriptor<C::block_m>(q_lo, 0, kk); // Q: block_m rows
    const uint64_t b = operandDescriptor<kBlockN>(k_lo, 0, kk);
    issueQKStep<C, kBlockN>(s, a, b, kk);
  }
}

// The descriptor low word of the Q tile (at q_addr, kRows rows) from row q_row0 on.
template <int kRows> FA4JIT_DEVICE uint32_t consumerQDescriptorLo(uint32_t q_addr, int q_row0) {
  return sw128DescriptorLo(q_addr) + (operandStepOffset<kRows>(q_row0, 0) >> 4);
}

} // namespace fa4jit::device::attention_sm90
