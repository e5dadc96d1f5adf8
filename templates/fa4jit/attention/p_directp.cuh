#pragma once
// directp route P (docs/NUMERICS.md §2.3): per 32-key block b (aligned to absolute
// keys, since tiles start at multiples of block_n, itself a multiple of 32) and row:
//   e_b = floor(max_b t - m) - 2 (t = acc * mul), y = fma(acc, mul, -(m + e_b)),
//   c = classifier(y) (fa4jit/directp.cuh, shared with the CPU model),
//   P_fed = E4M3(E2M1[c] * 2^(e_b + off)), l += P_fed.
// A block's 8 fed values form one PRMT table (formats.cuh), so the 4 codes of a fragment register
// become 4 E4M3 bytes in one PRMT with the codes as selector nibbles. The normalizer uses a second
// table of integers: P_fed = I[c] * u exactly, with I = 2*E2M1 = {0,1,2,3,4,6,8,12} and
// u = 2^(k-1) when k = e_b + off >= -8 (every fed value exact), and I = the E4M3 bytes themselves
// with u = 2^-9 below (all fed values are then < 2^-5, where an E4M3 byte is its value in units
// of 2^-9); dp4a sums the integers, one FP32 multiply-add per block and row.
// Fragment register layout as in p_nvfp8.cuh.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/half2.cuh"
#include "fa4jit/attention/mma.cuh"
#include "fa4jit/attention/score_tile.cuh"
#include "fa4jit/attention/softmax.cuh"
#include "fa4jit/directp.cuh"
#include "fa4jit/formats.cuh"

namespace fa4jit::device::attention {

// The threshold codes of one fragment row's four key pairs (i = 0..3: keys of n-tiles 4kb + i, y_h
// as FP16 pairs), as the two PRMT selectors of the block: lane 0 of a pair lands on magic 1024
// (FP16 bits 0x6400 | c), lane 1 on magic 64 (0x5400 | c << 4), so hi16 + lo16 has c0 | c1 << 4 in
// its low byte (one IMAD.HI), and one PRMT gathers two pairs' bytes into a selector's 4 nibbles.
template <class C>
FA4JIT_DEVICE void thresholdSelectors(const Half2 (&yh)[4], uint32_t (&sel)[2]) {
  constexpr DirectPThresholdSteps kSt = directpThresholdSteps(C::classifier);
  const Half2 th3 = half2Splat(directpHalfBits(kSt.th3)), th1 = half2Splat(directpHalfBits(kSt.th1));
  const Half2 d51 = half2Splat(directpHalfBits(kSt.d51)), th0 = half2Splat(directpHalfBits(kSt.th0));
  const Half2 d40 = half2Splat(directpHalfBits(kSt.d40)), d20 = half2Splat(directpHalfBits(kSt.d20));
  const Half2 dd = half2Splat(directpHalfBits(kSt.dd));
  const Half2 four = half2Splat(0x4400u), two = half2Splat(0x4000u), magic{0x54006400u};
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const Half2 v = directpThresholdSearch<Half2>(yh[i], th3, th1, d51, th0, d40, d20, dd, four, two, magic);
    w[i] = __umulhi(v.u, 0x10000u) + v.u;
  }
  sel[0] = bytePerm(w[0], w[1], 0x0040u);
  sel[1] = bytePerm(w[2], w[3], 0x0040u);
}

// The piecewise codes (directpPiecewiseCode) of one fragment row's four key pairs, as the two PRMT
// selectors of the block: per pair (x: y_h, or acc_h with the pieces folded onto S) two
// HFMA2.SAT, one HMNMX2 and one HFMA2 that rounds 7 z onto the magic number 1024 (FP16 bits
// 0x6400 | c: the code in bits 0..2 of each half); per two pairs one PRMT gathers the four code
// bytes as c00, c10, c01, c11 and one LEA.HI (t + t >> 12) moves c01 and c11 into nibbles 1 and
// 3: nibbles c00, c01, c10, c11, the selector. The pieces are the same in both lanes, so the FP16
// operations take them as immediates or half-swizzled registers (lane-specific ones cost a
// register move per use: ptxas rematerialized them).
FA4JIT_DEVICE void piecewiseSelectorsOf(const Half2 (&x)[4], Half2 a_lo, Half2 b_lo, Half2 a_hi, Half2 b_hi,
                                        uint32_t (&sel)[2]) {
  const Half2 seven = half2Splat(0x4700u), magic = half2Splat(0x6400u);
  uint32_t v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const Half2 z = half2Max(half2FmaSat(a_lo, x[i], b_lo), half2FmaSat(a_hi, x[i], b_hi));
    v[i] = directpFmaV(z, seven, magic).u;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t t = bytePerm(v[2 * h], v[2 * h + 1], 0x6240u);
    sel[h] = t + (t >> 12); // codes < 8: no carries
  }
}
template <class C>
FA4JIT_DEVICE void piecewiseSelectors(const Half2 (&yh)[4], uint32_t (&sel)[2]) {
  constexpr DirectPCoefficients kCoef = C::classifier;
  piecewiseSelectorsOf(yh, half2Splat(directpHalfBits(kCoef.piece[0])), half2Splat(directpHalfBits(kCoef.piece[1])),
                       half2Splat(directpHalfBits(kCoef.piece[2])), half2Splat(directpHalfBits(kCoef.piece[3])), sel);
}

// C::pieces_from_scores where the config has it (the wgmma kernels' configs bake it), else false.
template <class C> struct PiecesFromScoresOf {
  template <class X> FA4JIT_HD static constexpr bool get(decltype(&X::pieces_from_scores)) {
    return X::pieces_from_scores;
  }
  template <class X> FA4JIT_HD static constexpr bool get(...) { return false; }
  static constexpr bool value = get<C>(nullptr);
};

// P in two halves: classifyDirectP does the per-element work into plain registers and advances
// l, packDirectP writes the A fragments. The wgmma consumers run the second only after the PV that
// reads the previous fragments has completed: writing A-fragment registers only there (no copies
// between register sets) is what keeps ptxas from serializing the wgmma pipeline.
template <class CV> struct PendingP {
  static constexpr int kBlocks = AttentionTraits<CV>::kBlockN / 32; // k-steps of 32 S columns
  // The blocks a thread's row meets (key_order.cuh): one per k-step, or fewer with thread key blocks
  using Blocks = typename AttentionTraits<CV>::Blocks;
  static constexpr int kTables = Blocks::kBlocks;
  uint32_t sel[kBlocks][2][2]; // directp: PRMT selectors (a0/a1 and a2/a3 halves) per k-step and row
  uint32_t fed[kTables][2][2]; // directp: the block's E2M1 -> E4M3 table (lo, hi) per block and row
};

// The block's floor magic: round-down add of max(max_b t - m, -2^20) onto 1.5 * 2^23, whose bits
// are 0x4B400000 + floor(max_b t - m) (see classifyDirectP).
FA4JIT_DEVICE float directpFloorMagic(float block_max_acc, float mul, float m_use) {
  const float block_max_x = scoreOf(block_max_acc, mul) - m_use; // not fused: score_terms.cuh
  return __fadd_rd(fmaxf(block_max_x, -1048576.0f), 12582912.0f);
}
// k = e_b + p_offset_log2 (e_b = floor - 2), the exponent of the block's fed E4M3 values
// E2M1[c] * 2^k, from the block's floor magic.
template <class C> FA4JIT_DEVICE int directpFedExponent(float floor_magic) {
  return static_cast<int>(__float_as_uint(floor_magic) - 0x4B400000u) - 2 + C::p_offset_log2;
}

// The table bytes of a Direct-P selector: PRMT with the selector as it stands. Its nibbles 0..3
// are codes <= 7 (bit 3, PRMT's sign-replicate flag, clear) and PRMT reads only bits 0..15, so the
// hardware instruction is the lookup; __byte_perm, which defines selector values as 3 bits, costs
// a LOP3 (& 0x7777) before every PRMT: 16 per tile and thread.
FA4JIT_DEVICE uint32_t directpLookup(uint32_t lo, uint32_t hi, uint32_t sel) {
  return bytePermSignReplicating(lo, hi, sel);
}

// l += the block's fed values (kSumL), as integers: P_fed = I[c] * u exactly, with I = 2*E2M1 =
// {0,1,2,3,4,6,8,12} and u = 2^(k-1) when k >= -8 (kExactPart: every fed value exact, whatever
// the table), and I = the E4M3 bytes of the (general) table with u = 2^-9 below (!kExactPart: all
// fed values are then < 2^-5, where an E4M3 byte is its value in units of 2^-9); dp4a sums the
// integers, one FP32 multiply-add per block and row.
template <bool kExactPart, class PP>
FA4JIT_DEVICE void addBlockSum(float &l, const PP &pp, int kb, int r, int k) {
  const bool exact = k >= -8;
  if (exact != kExactPart)
    return;
  const int tb = PP::Blocks::blockOfStep(kb);
  const uint32_t int_lo = exact ? 0x03020100u : pp.fed[tb][r][0];
  const uint32_t int_hi = exact ? 0x0C080604u : pp.fed[tb][r][1];
  // exp2Int(k - 1) for k - 1 in [-9, 127) (k <= 8 + slack here), else 2^-9: plain bits.
  const float unit = __int_as_float(((exact ? k - 1 : -9) + 127) << 23);
  const uint32_t isum = __dp4a(directpLookup(int_lo, int_hi, pp.sel[kb][r][1]), 0x01010101u,
                               __dp4a(directpLookup(int_lo, int_hi, pp.sel[kb][r][0]), 0x01010101u, 0u));
  // isum <= 8 * 255 < 2^23: its float by the 2^23 magic number, no I2F.
  const float isum_f = __int_as_float(0x4B000000 | isum) - 8388608.0f;
  l = fmaf(isum_f, unit, l);
}

// Direct-P codes (p_directp.cuh's numerics) from precomputed block maxima of acc; mul is the
// score multiplier. The affine classifier runs as directpAffineFusedCode (directp.cuh) in three
// instructions per element:
//   FFMA.SAT z = sat(fma(alpha/8 * mul, acc, addend)); FFMA.RM bits(2^23 + floor(8z)) =
//   0x4B000000 | c; a shift-add of those bits into the selector nibble (the exponent bits land at
//   bit 23 and up, which PRMT ignores and which no carry can bring down).
// The others classify y = fma(acc, mul, bias) with the block's bias = -(m + e_b) (directpClassify).
// kSumL false: the wgmma kernel's PV sums l itself (mma_row_sum); the block sums are skipped.
// s: either form of score_tile.cuh. From FP16 scores (scores_fp16) with kFp16Input y_h =
// FP16(fma(acc_h, mul_h, bias_h)) in one HFMA2 per pair, with mul_h = FP16(mul) and bias_h =
// FP16(bias) (NUMERICS.md §2.3); without it (the wgmma consumers' masked arm) y in FP32 from the
// FP16 values, as from FP32 scores; the affine and mixed classifiers read them as FP32 always.
template <class C, bool kSumL = true, bool kFp16Input = true, class Scores>
FA4JIT_DEVICE void classifyDirectP(PendingP<C> &pp, const Scores &s,
                                   const float (&block_max)[AttentionTraits<C>::kBlockN / 32][2], SoftmaxRows &st,
                                   float mul) {
  using T = AttentionTraits<C>;
  constexpr DirectPCoefficients kCoef = C::classifier;
  constexpr bool kAffine = kCoef.kind == 1;
  // y < 3 in every block (its max minus floor(max) + 2), so alpha*3 + beta <= 7.5 keeps 8z below
  // 8 with room for the roundings of the addend: the min(., 7) of the definition is then void.
  constexpr bool kNeedsUpperClamp = !(kCoef.alpha > 0.0f && kCoef.alpha * 3.0f + kCoef.beta <= 7.5f);
  constexpr float kBelowOne = 0.99999994f; // 1 - 2^-24: floor(8 * kBelowOne) = 7
  bool all_normal = true; // every block's fed exponent k >= -5
  // A block's terms (its floor magic, exponent and table) come once per block and row: per k-step
  // of 32 S columns where a block spans a quad, once per block of the thread's with thread key
  // blocks (softmax.cuh's rowTileMax then repeats the block max at each of its k-steps).
  using B = typename T::Blocks;
  // The piecewise classifier with its pieces folded onto FP16 scores (pieces_from_scores,
  // NUMERICS.md §2.3): z = sat(fma(acc_h, FP16(a mul), FP16(fma(a, bias, b)))) per piece, one
  // HFMA2.SAT per piece and pair from S (y_h is never formed), the offsets once per block and row.
  constexpr bool kFolded = ScoreTile<C>::kFp16 && kFp16Input && kCoef.kind == 3 && PiecesFromScoresOf<C>::value;
  Half2 folded_b[2][2] = {}; // per row: the lower and the upper piece's offset
  float floor_magic[2] = {0.0f, 0.0f}, neg_e_f[2] = {0.0f, 0.0f};
  int k_fed[2] = {0, 0};
  uint32_t fed_lo[2] = {0u, 0u}, fed_hi[2] = {0u, 0u};
#pragma unroll
  for (int kb = 0; kb < T::kBlockN / 32; ++kb) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (B::startsBlock(kb)) {
        // e_b = directpBlockExponent(max_b t - m) without the conversion pipe (F2I/I2F run at
        // MUFU's 16/clk/SM): a round-down add onto 1.5 * 2^23 is floor() and its low bits the
        // integer. Clamping x at -2^20 only touches blocks 2^-1000000 below the row max, whose
        // fed values and normalizer terms are 0 either way (e2m1ToE4M3TablePow2 clamps too).
        // A block without a visible key (block max -inf) needs no branch: it gets e_b = -2^20 - 2,
        // all its keys have acc = -inf and code 0 in every classifier, and its table is zeros.
        floor_magic[r] = directpFloorMagic(block_max[kb][r], mul, st.m_use[r]);
        // -e_f = -(floor - 2) exactly (an integer of at most 2^20 + 2), so the bias -(m + e_f)
        // is one FADD: (-e_f) - m rounds as -(m + e_f) does.
        neg_e_f[r] = 12582914.0f - floor_magic[r];
        k_fed[r] = directpFedExponent<C>(floor_magic[r]);
        all_normal = all_normal && k_fed[r] >= -5;
        // k in [-5, 6] (blocks within 2^-11 of the row max: nearly always all of a thread's):
        // two IMADs build the table. k <= 6 always: e_b <= slack - 2 and p_offset_log2 +
        // ceil(slack) <= 8 (spec validator). A thread with a block below takes the general
        // tables after the loop: one branch per thread and tile, not one per block.
        const E2M1ToE4M3Table fed = e2m1ToE4M3TablePow2Normal(k_fed[r]);
        fed_lo[r] = fed.lo;
        fed_hi[r] = fed.hi;
        if constexpr (kFolded) {
          const float bias = neg_e_f[r] - st.m_use[r]; // == directpBias(m, e_f)
          const float b_lo = fmaf(kCoef.piece[0], bias, kCoef.piece[1]);
          const float b_hi = fmaf(kCoef.piece[2], bias, kCoef.piece[3]);
          folded_b[r][0] = half2FromFloats(b_lo, b_lo);
          folded_b[r][1] = half2FromFloats(b_hi, b_hi);
        }
      }
      uint32_t sel[2] = {0u, 0u};
      { // (a scope of its own: the k-step's bias and codes end with it)
        const float e_f = -neg_e_f[r];
        if constexpr (kAffine) {
          const float slope = directpAffineSlope(kCoef, mul);
          const float addend = directpAffineAddend(kCoef, st.m_use[r], e_f);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float z = __saturatef(fmaf(slope, scoreValue(s, 4 * kb + i, r, e), addend));
              if constexpr (kNeedsUpperClamp)
                z = fminf(z, kBelowOne);
              const uint32_t bits = __float_as_uint(__fmaf_rd(z, 8.0f, 8388608.0f));
              sel[i / 2] += bits << (4 * (2 * (i % 2) + e));
            }
          }
        } else if constexpr (kFolded) { // piecewise, each piece from S (its offsets at the block's start)
          Half2 acc_h[4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            acc_h[i] = Half2{s[4 * kb + i][r]};
          const float a_lo = kCoef.piece[0] * mul, a_hi = kCoef.piece[2] * mul;
          piecewiseSelectorsOf(acc_h, half2FromFloats(a_lo, a_lo), folded_b[r][0], half2FromFloats(a_hi, a_hi),
                               folded_b[r][1], sel);
        } else if constexpr (kCoef.kind == 0 || kCoef.kind == 3) { // threshold, piecewise: FP16 pairs
          const float bias = neg_e_f[r] - st.m_use[r]; // == directpBias(m, e_f)
          Half2 yh[4];
          if constexpr (ScoreTile<C>::kFp16 && kFp16Input) {
            const Half2 mul_h = half2FromFloats(mul, mul), bias_h = half2FromFloats(bias, bias);
#pragma unroll
            for (int i = 0; i < 4; ++i)
              yh[i] = directpFmaV(Half2{s[4 * kb + i][r]}, mul_h, bias_h);
          } else {
#pragma unroll
            for (int i = 0; i < 4; ++i)
              yh[i] = half2FromFloats(scoreExponent(scoreValue(s, 4 * kb + i, r, 0), mul, bias),
                                      scoreExponent(scoreValue(s, 4 * kb + i, r, 1), mul, bias));
          }
          if constexpr (kCoef.kind == 0)
            thresholdSelectors<C>(yh, sel);
          else
            piecewiseSelectors<C>(yh, sel);
        } else {
          const float bias = directpBias(st.m_use[r], e_f);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float y = scoreExponent(scoreValue(s, 4 * kb + i, r, e), mul, bias);
              const uint32_t c = static_cast<uint32_t>(directpCode(kCoef, y));
              sel[i / 2] |= c << (4 * (2 * (i % 2) + e));
            }
          }
        }
        if (B::startsBlock(kb)) {
          pp.fed[B::blockOfStep(kb)][r][0] = fed_lo[r];
          pp.fed[B::blockOfStep(kb)][r][1] = fed_hi[r];
        }
        pp.sel[kb][r][0] = sel[0];
        pp.sel[kb][r][1] = sel[1];
        if constexpr (kSumL)
          addBlockSum<true>(st.l[r], pp, kb, r, k_fed[r]);
      }
    }
  }
  if (!all_normal) {
#pragma unroll
    for (int kb = 0; kb < T::kBlockN / 32; ++kb)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int k = directpFedExponent<C>(directpFloorMagic(block_max[kb][r], mul, st.m_use[r]));
        if (B::startsBlock(kb)) {
          const E2M1ToE4M3Table fed = e2m1ToE4M3TablePow2(k);
          pp.fed[B::blockOfStep(kb)][r][0] = fed.lo;
          pp.fed[B::blockOfStep(kb)][r][1] = fed.hi;
        }
        if constexpr (kSumL)
          addBlockSum<false>(st.l[r], pp, kb, r, k);
      }
  }
}

template <class C>
FA4JIT_DEVICE void packDirectP(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4], const PendingP<C> &pp) {
#pragma unroll
  for (int kb = 0; kb < AttentionTraits<C>::kBlockN / 32; ++kb)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int tb = PendingP<C>::Blocks::blockOfStep(kb);
      pa[kb][r] = directpLookup(pp.fed[tb][r][0], pp.fed[tb][r][1], pp.sel[kb][r][0]);
      pa[kb][2 + r] = directpLookup(pp.fed[tb][r][0], pp.fed[tb][r][1], pp.sel[kb][r][1]);
    }
}

// Both halves at once (the mma.sync kernel, whose MMAs are synchronous).
template <class C>
FA4JIT_DEVICE void buildPDirectP(uint32_t (&pa)[AttentionTraits<C>::kBlockN / 32][4],
                                 const float (&s)[AttentionTraits<C>::kSTiles][4], SoftmaxRows &st, float mul) {
  float block_max[AttentionTraits<C>::kBlockN / 32][2], tile_max[2];
  rowTileMax<C, true>(s, block_max, tile_max);
  PendingP<C> pp;
  classifyDirectP<C>(pp, s, block_max, st, mul);
  packDirectP<C>(pa, pp);
}

} // namespace fa4jit::device::attention
