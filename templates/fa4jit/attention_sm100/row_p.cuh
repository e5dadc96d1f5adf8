#pragma once
// P of one row for the tcgen05 PV product, and the normalizer of exactly the values fed.
//  directp (NUMERICS.md §2.3, Widening::Native): per 32-key block e_b = floor(max t - m) - 2 with
//    t = acc * mul, c = classifier(fma(acc, mul, -(m + e_b))) (fa4jit/directp.cuh, the code the mma.sync path and the CPU model
//    run), P = E2M1[c] * 2^e_b fed as an MXFP4 block: 4-bit codes (8 per 32-bit TMEM column, key
//    8w + i in bits 4i..4i+3, the packed-payload order of NUMERICS.md §1) plus the UE8M0 byte
//    e_b + 127 (e_b clamped to >= -127). l += sum of the fed values: the block's codes summed as
//    integers 2*E2M1[c] in {0,1,2,3,4,6,8,12}, times 2^(e_b - 1), one FMA per block (exact terms).
//  nvfp8: P = E4M3(exp2(fma(acc, mul, off - m))), 4 per column (key 4w + i in byte i), l += the decoded bytes.
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention_sm100/row_softmax.cuh"
#include "fa4jit/directp.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention {

// Twice the E2M1 magnitude of code c (c in 0..7), one byte each.
FA4JIT_DEVICE uint32_t twiceE2m1(uint32_t c) {
  return static_cast<uint32_t>((0x0C08060403020100ull >> (8u * c)) & 0xFFu);
}

// words: kBlockN / 8 columns of codes; scales: the 4 UE8M0 bytes of the row (block b in byte b).
template <class C>
FA4JIT_DEVICE void sm100BuildPDirectP(uint32_t (&words)[Sm100AttentionTraits<C>::kBlockN / 8], uint32_t &scales,
                                      const float (&acc)[Sm100AttentionTraits<C>::kBlockN], float mul, Sm100Row &r) {
  constexpr int kN = Sm100AttentionTraits<C>::kBlockN;
  constexpr DirectPCoefficients kCoef = C::classifier;
  scales = 0u;
#pragma unroll
  for (int b = 0; b < kN / 32; ++b) {
    float block_max = negInf();
#pragma unroll
    for (int i = 0; i < 32; ++i)
      block_max = fmaxf(block_max, acc[32 * b + i]);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      words[4 * b + w] = 0u;
    if (block_max == negInf())
      continue; // no visible key: codes 0 feed zeros whatever the scale (byte 0 = 2^-127)
    // max_b t = (max_b acc) * mul for mul > 0 (rounding is monotone); t - m unfused (score_terms.cuh).
    const int e_b = directpBlockExponent(scoreOf(block_max, mul) - r.m_use);
    const float e_f = static_cast<float>(e_b);
    uint32_t isum = 0u;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const float a = acc[32 * b + i];
      const uint32_t c = a == negInf() ? 0u : static_cast<uint32_t>(directpClassify(kCoef, a, mul, r.m_use, e_f));
      words[4 * b + i / 8] |= c << (4 * (i % 8));
      isum += twiceE2m1(c);
    }
    const int e_fed = e_b < -127 ? -127 : e_b;
    scales |= static_cast<uint32_t>(e_fed + 127) << (8 * b);
    r.l = fmaf(static_cast<float>(isum), exp2Int(e_fed - 1), r.l);
  }
}

template <class C>
FA4JIT_DEVICE void sm100BuildPNvfp8(uint32_t (&words)[Sm100AttentionTraits<C>::kBlockN / 4],
                                    const float (&acc)[Sm100AttentionTraits<C>::kBlockN], float mul, Sm100Row &r) {
  constexpr int kN = Sm100AttentionTraits<C>::kBlockN;
  const float addend = static_cast<float>(C::p_offset_log2) - r.m_use;
#pragma unroll
  for (int w = 0; w < kN / 4; ++w) {
    uint32_t half[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float x0 = scoreExponent(acc[4 * w + 2 * h], mul, addend);
      const float x1 = scoreExponent(acc[4 * w + 2 * h + 1], mul, addend);
      half[h] = floatsToE4M3x2(exp2Hw(x0), exp2Hw(x1));
      float f0, f1;
      unpackE4m3x2(half[h], f0, f1);
      r.l += f0;
      r.l += f1;
    }
    words[w] = half[0] | (half[1] << 16);
  }
}

} // namespace fa4jit::device::attention
