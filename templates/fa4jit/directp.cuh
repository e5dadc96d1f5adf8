#pragma once
// Direct-P classifiers (docs/NUMERICS.md §2.3): map y = x - e_b straight to an
// E2M1 magnitude code without computing exp2. Host-compilable: the CPU models call these same
// functions, so kernel and model agree on every code for equal inputs.
#include "fa4jit/common.cuh"
#include "fa4jit/score_terms.cuh"

#if !defined(__CUDACC_RTC__)
#include <cmath>
#endif

namespace fa4jit::device {

// The classifier's constants, baked into a kernel by the code generator.
struct DirectPCoefficients {
  int kind;           // 0 threshold, 1 affine, 2 mixed, 3 piecewise (== fa4jit::ClassifierKind)
  float alpha, beta;  // affine: c = clamp(floor(alpha*y + beta), 0, 7)
  float theta[7];     // threshold: c = #{k : y >= theta[k]}
  float y_split;      // mixed: y >= y_split uses exp2 + round-to-nearest
  float piece[4];     // piecewise: slope, offset of the lower and the upper piece (FP16 values)
};

FA4JIT_HD float directpFloor(float v) {
#if defined(__CUDA_ARCH__)
  return floorf(v);
#else
  return std::floor(v);
#endif
}

FA4JIT_HD float directpExp2(float v) {
#if defined(__CUDA_ARCH__)
  return exp2Hw(v);
#else
  return std::exp2(v);
#endif
}

// Block exponent of a 32-key block from the block max of x (NUMERICS.md §2.3).
FA4JIT_HD int directpBlockExponent(float block_max_x) {
  return static_cast<int>(directpFloor(block_max_x)) - 2;
}

// The threshold classifier compares y rounded to FP16 (NUMERICS.md §2.3) with thresholds that are
// FP16 values on a grid: multiples of 2^-7 in [-4, 4]. Rounding y changes a code only within
// 2^-12 (relative) of a threshold; the grid moves the default thresholds by < 0.003 in log2,
// < 0.2% of P at a round-to-nearest midpoint. In exchange the sm_90a kernel classifies two keys
// per instruction on packed halves (directpThresholdSearch below, attention/p_directp.cuh).
constexpr int kDirectPThresholdGridLog2 = 7;
constexpr float kDirectPThresholdLimit = 4.0f;

// y rounded to FP16 (to nearest, ties to even; overflow to +-inf, NaN stays NaN), as a float.
FA4JIT_HD float directpThresholdInput(float y) {
#if defined(__CUDA_ARCH__)
  unsigned short h;
  float r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(y));
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
#else
  return static_cast<float>(roundToHalf(y));
#endif
}

// The FP16 bits of an FP16 value that is zero or normal (a threshold grid value, a piecewise
// coefficient: the spec validator's rules): evaluated at compile time for the kernel's packed
// constants, by arithmetic alone (no bit casts in constexpr).
FA4JIT_HD constexpr uint32_t directpHalfBits(float v) {
  const uint32_t sign = v < 0.0f ? 0x8000u : 0u;
  float a = v < 0.0f ? -v : v;
  if (a == 0.0f)
    return sign;
  int e = 0;
  while (a >= 2.0f) {
    a *= 0.5f;
    ++e;
  }
  while (a < 1.0f) {
    a *= 2.0f;
    --e;
  }
  return sign | (static_cast<uint32_t>(e + 15) << 10) | static_cast<uint32_t>((a - 1.0f) * 1024.0f);
}

// The binary search of the threshold classifier on values instead of branches, for V = float (the
// host's test of it) or a pair of FP16 values (the kernel): each outcome g in {1, 0} picks the next
// threshold by an FMA, g * difference + threshold, and the code 4 g3 + 2 gm + gl lands on a magic
// number (FP16 1024 + c has c in its low bits). Exact on the grid: every value it forms is a
// multiple of 2^-7 below 8 in magnitude (11 significant bits: FP16's), every sum onto the magic
// number an integer below 2048.
struct DirectPThresholdSteps {
  float th3, th1, d51; // first compare; second threshold th1 + g3 * (th5 - th1)
  float th0, d40;      // third threshold: th0 + g3 * (th4 - th0) + gm * (d20 + g3 * dd)
  float d20, dd;       //   with dd = (th6 - th4) - (th2 - th0)
};
FA4JIT_HD constexpr DirectPThresholdSteps directpThresholdSteps(const DirectPCoefficients &k) {
  const float *t = k.theta;
  return {t[3], t[1], t[5] - t[1], t[0], t[4] - t[0], t[2] - t[0], (t[6] - t[4]) - (t[2] - t[0])};
}
FA4JIT_HD float directpGeq(float a, float b) { return a >= b ? 1.0f : 0.0f; }
FA4JIT_HD float directpFmaV(float a, float b, float c) { return fusedMulAdd(a, b, c); }
FA4JIT_HD float directpAddV(float a, float b) { return a + b; }

// magic + code of y (already rounded to FP16) for V = float or an FP16 pair; the step constants
// come as V too (an FP16 pair holds each twice), and four, two, magic per lane.
template <class V>
FA4JIT_HD V directpThresholdSearch(V y, V th3, V th1, V d51, V th0, V d40, V d20, V dd, V four, V two, V magic) {
  const V g3 = directpGeq(y, th3);
  const V gm = directpGeq(y, directpFmaV(g3, d51, th1));
  const V th_last = directpFmaV(gm, directpFmaV(g3, dd, d20), directpFmaV(g3, d40, th0));
  const V gl = directpGeq(y, th_last);
  return directpAddV(directpFmaV(gm, two, directpFmaV(g3, four, magic)), gl);
}

// c = #{i : FP16(y) >= theta[i]} for strictly increasing grid thresholds (the spec validator's
// rules), by the binary search above in FP32 (exact on the grid as in FP16). NaN: code 0.
FA4JIT_HD int directpThresholdCode(const DirectPCoefficients &k, float y) {
  const DirectPThresholdSteps st = directpThresholdSteps(k);
  const float v = directpThresholdSearch<float>(directpThresholdInput(y), st.th3, st.th1, st.d51, st.th0, st.d40,
                                                st.d20, st.dd, 4.0f, 2.0f, 1024.0f);
  return static_cast<int>(v - 1024.0f);
}

// The definition, for the tests: one compare per threshold.
FA4JIT_HD int directpThresholdCodeLinear(const DirectPCoefficients &k, float y) {
  const float h = directpThresholdInput(y);
  int c = 0;
  for (int i = 0; i < 7; ++i)
    c += (h >= k.theta[i]) ? 1 : 0;
  return c;
}

FA4JIT_HD int directpAffineCode(const DirectPCoefficients &k, float y) {
#if defined(__CUDA_ARCH__)
  float z = floorf(fmaf(k.alpha, y, k.beta));
#else
  float z = std::floor(std::fma(k.alpha, y, k.beta));
#endif
  z = z < 0.0f ? 0.0f : (z > 7.0f ? 7.0f : z);
  return static_cast<int>(z);
}

// The piecewise classifier (NUMERICS.md §2.3): the code is the rounded maximum of two saturated
// affine pieces of y, all in FP16, one rounding per operation:
//   y_h = FP16(y), z_lo = sat(fma(a_lo, y_h, b_lo)), z_hi = sat(fma(a_hi, y_h, b_hi)),
//   c = rn(7 * max(z_lo, z_hi))                    (sat: clamp to [0, 1], NaN -> 0; ties to even)
// The lower piece places the boundaries of codes 1 and 2 (E2M1's 0.5 below 1), the upper one, of
// slope 2 codes per unit of y, the five boundaries from 1 to 6 whose log2 spacing alternates
// 0.485 / 0.515: with the default pieces every boundary lies within 0.01 of log2 of the
// round-to-nearest midpoint, the threshold classifier's accuracy at a third of its instructions
// (the sm_90a kernel runs it on FP16 pairs: two HFMA2.SAT, one HMNMX2, one HFMA2 per two keys).
FA4JIT_HD int directpPiecewiseCode(const DirectPCoefficients &k, float y) {
#if defined(__CUDA_ARCH__)
  unsigned short yh, zl, zh, z, v;
  const unsigned short al = static_cast<unsigned short>(directpHalfBits(k.piece[0]));
  const unsigned short bl = static_cast<unsigned short>(directpHalfBits(k.piece[1]));
  const unsigned short ah = static_cast<unsigned short>(directpHalfBits(k.piece[2]));
  const unsigned short bh = static_cast<unsigned short>(directpHalfBits(k.piece[3]));
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(yh) : "f"(y));
  asm("fma.rn.sat.f16 %0, %1, %2, %3;" : "=h"(zl) : "h"(al), "h"(yh), "h"(bl));
  asm("fma.rn.sat.f16 %0, %1, %2, %3;" : "=h"(zh) : "h"(ah), "h"(yh), "h"(bh));
  asm("max.f16 %0, %1, %2;" : "=h"(z) : "h"(zl), "h"(zh));
  asm("fma.rn.f16 %0, %1, %2, %3;" : "=h"(v) : "h"(z), "h"(static_cast<unsigned short>(0x4700u)),
      "h"(static_cast<unsigned short>(0x6400u))); // 7 z + 1024: the code in the low bits
  return static_cast<int>(v) - 0x6400;
#else
  // Each FP16 FMA is exact in double (products of 11-bit values, sums within 53 bits) and then
  // rounded once, as the hardware's.
  const double yh = roundToHalf(y);
  auto sat = [](double v) { return v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0; }; // NaN -> 0
  const double zl = sat(roundToHalf(static_cast<double>(k.piece[0]) * yh + k.piece[1]));
  const double zh = sat(roundToHalf(static_cast<double>(k.piece[2]) * yh + k.piece[3]));
  const double z = zl > zh ? zl : zh;
  return static_cast<int>(roundToHalf(7.0 * z + 1024.0) - 1024.0);
#endif
}

// Round-to-nearest E2M1 magnitude code of p >= 0, ties to the even code, saturating at 6.
FA4JIT_HD int e2m1NearestCode(float p) {
  // Boundaries between consecutive magnitudes {0,.5,1,1.5,2,3,4,6}; at a tie the even code wins.
  const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  int c = 0;
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#pragma unroll
#endif
  for (int i = 0; i < 7; ++i) {
    // Above the midpoint: next code. Exactly at it: the even one of (i, i+1).
    const bool up = p > mid[i] || (p == mid[i] && ((i + 1) % 2 == 0));
    c += up ? 1 : 0;
  }
  return c;
}

FA4JIT_HD int directpCode(const DirectPCoefficients &k, float y) {
  if (k.kind == 0)
    return directpThresholdCode(k, y);
  if (k.kind == 3)
    return directpPiecewiseCode(k, y);
  if (k.kind == 2 && y >= k.y_split)
    return e2m1NearestCode(directpExp2(y));
  return directpAffineCode(k, y);
}

// The classifier input of a key in block b, from its accumulator (NUMERICS.md §2.3):
//   y = fma(acc, mul, bias), bias = -(m + e_b)    (m + e_b rounded once per row and block)
// which is t - m - e_b with t = acc * mul, in one FFMA per key.
FA4JIT_HD float directpBias(float m_use, float e_f) { return -(m_use + e_f); }

// The affine classifier as kernels and models evaluate it (NUMERICS.md §2.3): the score
// multiplier, the row max m and the block exponent e_b are folded into one slope per launch and
// one addend per row and block, so that each element costs one FMA with saturation, one FMA that
// rounds down onto a magic number, and a shift-add:
//   s = (alpha / 8) * mul, a = fma(-alpha / 8, m + e_b, beta / 8)
//   z = sat(fma(s, acc, a)),  c = min(floor(8 z), 7)              (per element; sat(NaN) = 0)
// which is clamp(floor(alpha * y + beta), 0, 7) with y = acc * mul - m - e_b up to the roundings
// of s and a.
FA4JIT_HD float directpAffineSlope(const DirectPCoefficients &k, float mul) { return (k.alpha * 0.125f) * mul; }
FA4JIT_HD float directpAffineAddend(const DirectPCoefficients &k, float m_use, float e_f) {
  return fusedMulAdd(-(k.alpha * 0.125f), m_use + e_f, k.beta * 0.125f);
}
FA4JIT_HD float directpAffineSaturated(float slope, float acc, float addend) {
  const float z = fusedMulAdd(slope, acc, addend);
  return z > 0.0f ? (z < 1.0f ? z : 1.0f) : 0.0f; // == __saturatef, NaN -> 0
}
FA4JIT_HD int directpAffineFusedCode(float slope, float acc, float addend) {
  const int c = static_cast<int>(directpFloor(8.0f * directpAffineSaturated(slope, acc, addend)));
  return c < 7 ? c : 7;
}

// The code of a key with accumulator acc (-inf for a masked key, code 0 then) in a block with
// exponent e_b, in a row whose max in use is m_use, with the score multiplier mul (> 0,
// scoreMultiplier): the one entry point of kernels and models.
FA4JIT_HD int directpClassify(const DirectPCoefficients &k, float acc, float mul, float m_use, float e_f) {
  if (k.kind == 1)
    return directpAffineFusedCode(directpAffineSlope(k, mul), acc, directpAffineAddend(k, m_use, e_f));
  return directpCode(k, scoreExponent(acc, mul, directpBias(m_use, e_f)));
}

#if !defined(__CUDA_ARCH__)
// The same from an FP16 score in a tile that forms y in FP16 (TileSpec::scores_fp16, NUMERICS.md
// §2.3): the threshold and piecewise classifiers, which take y in FP16 anyway, get y_h =
// FP16(fma(acc_h, FP16(mul), FP16(bias))) — the kernel's one HFMA2 per pair of keys, exact in
// double before its one rounding (acc_h and the two FP16 factors have 11 significant bits each);
// the others classify acc_h as an FP32 accumulator. (Tiles that form y in FP32 call
// directpClassify with acc_h.) The CPU models' twin: the kernel evaluates pairs in p_directp.cuh.
inline int directpClassifyFp16Score(const DirectPCoefficients &k, float acc_h, float mul, float m_use, float e_f) {
  if (k.kind != 0 && k.kind != 3)
    return directpClassify(k, acc_h, mul, m_use, e_f);
  const double y_h = roundToHalf(static_cast<double>(acc_h) * roundToHalf(mul) + roundToHalf(directpBias(m_use, e_f)));
  return directpCode(k, static_cast<float>(y_h));
}

// The piecewise classifier with its pieces folded onto the FP16 score (TileSpec::
// pieces_from_scores, NUMERICS.md §2.3): per piece A = FP16(a * mul) (the product in FP32) and
// B = FP16(fma(a, bias, b)) (FP32), z = sat(FP16(acc_h * A + B)) in one HFMA2.SAT per pair of keys
// (so y is never formed), then c = rn(7 max(z_lo, z_hi)) as directpPiecewiseCode. The kernel's
// twin is p_directp.cuh's classifyDirectP.
inline int directpPiecewiseFoldedCode(const DirectPCoefficients &k, float acc_h, float mul, float bias) {
  auto sat = [](double v) { return v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0; }; // NaN -> 0
  auto piece = [&](float a, float b) {
    const double slope = roundToHalf(a * mul), offset = roundToHalf(std::fma(a, bias, b));
    return sat(roundToHalf(static_cast<double>(acc_h) * slope + offset));
  };
  const double zl = piece(k.piece[0], k.piece[1]), zh = piece(k.piece[2], k.piece[3]);
  const double z = zl > zh ? zl : zh;
  return static_cast<int>(roundToHalf(7.0 * z + 1024.0) - 1024.0);
}
#endif

// Whether FP16 scores may form the classifier's input in FP16 for a head of multiplier mul: the
// FP16 multiplier, or with folded pieces each piece's slope times it, finite (below 65520, where
// FP32 rounds to FP16 infinity). Kernels and models decide the same way.
FA4JIT_HD bool directpHalfMultiplierFits(const DirectPCoefficients &k, float mul, bool pieces_from_scores) {
  float scale = 1.0f;
  if (pieces_from_scores && k.kind == 3) {
    scale = k.piece[0] > scale ? k.piece[0] : scale;
    scale = k.piece[2] > scale ? k.piece[2] : scale;
  }
  return mul * scale < 65520.0f;
}

} // namespace fa4jit::device
