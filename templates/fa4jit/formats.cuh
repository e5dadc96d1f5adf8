#pragma once
// Bit-exact scalar number formats (docs/NUMERICS.md §1) for kernels and for the
// host. The host library (codegen/src/formats.cpp) is a thin wrapper over these functions, so the
// quantizer kernels, the CPU models and the tests share one implementation.
//
// Rounding is round-to-nearest-even on the code (bit pattern), saturating where the PTX
// instruction a format mirrors saturates. Non-finite and signed-zero behaviour follows the PTX
// conversions (and CUDA's own emulation of them in cuda_fp4.hpp / cuda_fp8.hpp):
//   E2M1  (cvt.rn.satfinite.e2m1x2.f32): ±Inf and |x| > 6 -> ±6 (code 7 | sign); NaN -> +6 (0x7);
//         the sign survives rounding to zero (-0.1 -> 0x8, "-0").
//   E4M3  (cvt.rn.satfinite.e4m3x2.f32): ±Inf and |x| > 448 -> ±448 (0x7E | sign); NaN -> 0x7F;
//         the sign survives rounding to zero. FP32 subnormal inputs are not flushed (they round
//         to ±0 like any value below 2^-10).
//   BF16  (cvt.rn.bf16.f32): no saturation (overflow -> ±Inf); NaN -> canonical 0x7FFF.
// On the device, E4M3 (sm_89+), E2M1 (sm_100a family) and BF16 (sm_80+) use the PTX instruction;
// everywhere else the software path below runs. Both give the same bits for every FP32 input.
#include "fa4jit/common.cuh"

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstring>
#endif

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000) &&                                          \
    (defined(__CUDA_ARCH_SPECIFIC__) || defined(__CUDA_ARCH_FAMILY_SPECIFIC__))
// cvt...e2m1x2 exists only on the arch-/family-specific Blackwell targets (sm_100a, sm_120a, ...).
#define FA4JIT_HAS_PTX_E2M1 1
#else
#define FA4JIT_HAS_PTX_E2M1 0
#endif
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
#define FA4JIT_HAS_PTX_E4M3 1
#else
#define FA4JIT_HAS_PTX_E4M3 0
#endif
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define FA4JIT_HAS_PTX_BF16 1
#else
#define FA4JIT_HAS_PTX_BF16 0
#endif

namespace fa4jit::device {

// ---- bit casts --------------------------------------------------------------------------------
FA4JIT_HD uint32_t floatAsBits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

FA4JIT_HD float bitsAsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// 2^k as an FP32, exact for k in [-149, 127] (FP32 subnormals included); 0 below, +Inf above.
FA4JIT_HD float exp2Int(int k) {
  if (k > 127)
    return bitsAsFloat(0x7F800000u);
  if (k >= -126)
    return bitsAsFloat(static_cast<uint32_t>(k + 127) << 23);
  if (k >= -149)
    return bitsAsFloat(1u << (k + 149));
  return 0.0f;
}

// PRMT in its default mode, bit 3 of each selector nibble included: where it is set, the output
// byte is bit 7 of the selected byte replicated (0x00 or 0xFF), which moves sign bits by whole
// bytes.
FA4JIT_HD uint32_t bytePermSignReplicating(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
  return r;
#else
  const uint64_t bytes = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n) {
    const uint32_t nibble = (s >> (4 * n)) & 0xFu;
    uint32_t byte = static_cast<uint32_t>((bytes >> (8 * (nibble & 7u))) & 0xFFu);
    if (nibble & 8u)
      byte = (byte & 0x80u) != 0u ? 0xFFu : 0x00u;
    r |= byte << (8 * n);
  }
  return r;
#endif
}

// __byte_perm semantics (selector nibble n picks byte (s >> 4n) & 7 of the pair {x = bytes 0..3,
// y = bytes 4..7}); on the device this is one PRMT, the primitive behind all 8-entry byte tables.
// Bit 3 of each selector nibble is not part of a selector here (the host emulation masks it off);
// callers that want PRMT's sign replication call bytePermSignReplicating.
FA4JIT_HD uint32_t bytePerm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  return bytePermSignReplicating(x, y, s & 0x7777u);
#endif
}

// ---- software rounding to a small float format ------------------------------------------------
// Magnitude code of |x| (FP32 bits `u`, sign clear, finite, at most the format's max) rounded to
// nearest-even in a format with `kMant` mantissa bits, exponent bias `kBias`, subnormals and no
// Inf/NaN codes in range. RNE on the FP32 bit pattern is RNE on the target code, because both
// orders are monotone in the value; a carry out of the mantissa correctly bumps the exponent.
template <int kMant, int kBias>
FA4JIT_HD uint32_t roundMagnitudeRne(uint32_t u) {
  const int biased = static_cast<int>(u >> 23);
  const int exponent = biased != 0 ? biased - 127 : -126;
  const int min_normal_exponent = 1 - kBias;
  if (exponent >= min_normal_exponent) {
    const int drop = 23 - kMant;
    const uint32_t rounded = (u + ((1u << (drop - 1)) - 1u) + ((u >> drop) & 1u)) >> drop;
    return rounded - (static_cast<uint32_t>(127 - kBias) << kMant);
  }
  // Subnormal in the target: count units of 2^(min_normal_exponent - kMant).
  const uint32_t significand = (u & 0x7FFFFFu) | (biased != 0 ? 0x800000u : 0u);
  const int drop = 23 - kMant + (min_normal_exponent - exponent);
  if (drop > 24) // below half the smallest subnormal (significand < 2^24)
    return 0;
  const uint32_t q = significand >> drop;
  const uint32_t rem = significand & ((1u << drop) - 1u);
  const uint32_t half = 1u << (drop - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// ---- Division by a per-block scale -------------------------------------------------------------
// x / s for many x and one s, given r = RN(1/s): q0 = RN(x·r), the remainder x − q0·s (exact with
// an FMA), then RN(q0 + rem·r) (Markstein's correction step): three operations instead of an IEEE
// division. For s in [2^−90, 2^126] (quotientByReciprocalOk) the result is the correctly rounded
// quotient wherever the remainder does not underflow, which holds for every |x| ≥ 2^−100·s; below
// that the quotient lies far under the smallest nonzero E2M1 or E4M3 code, so the codes of the
// two always agree (a host test checks this on hundreds of millions of (x, s) pairs aimed at the
// rounding midpoints).
FA4JIT_HD bool quotientByReciprocalOk(float s) { return s >= 0x1p-90f && s <= 0x1p126f; }
FA4JIT_HD float quotientByReciprocal(float x, float s, float r) {
#if defined(__CUDA_ARCH__)
  const float q0 = __fmul_rn(x, r);
  return __fmaf_rn(__fmaf_rn(-q0, s, x), r, q0);
#else
  const float q0 = x * r;
  return std::fma(std::fma(-q0, s, x), r, q0);
#endif
}

// ---- E2M1 (FP4): sign in bit 3, magnitude code 0..7 = {0, .5, 1, 1.5, 2, 3, 4, 6} -------------
// Magnitude code of |x| for x not NaN: round to nearest even on the grid, |x| > 5 (±Inf included)
// saturating to 6. The grid steps by 0.5 below 2, by 1 up to 4 and by 2 up to 6, so the code is
// RNE(2y) below 2, RNE(y) + 2 up to 4 and RNE(y / 2) + 4 up to 6 (y = |x|); each line lies below
// the others on its own interval, so the code is the least of the three and 7. Adding M = 2^23
// (whose ulp is 1 from M on, and y is not negative) makes FP32's own rounding the RNE to an
// integer: the result's bits 0..22 are the code alone, exponent bits lie above. Three FMA-pipe
// operations and three minima: the FP4 quantizers are bound by instruction issue, and this spares
// the integer pipe the bit arithmetic of rounding on the FP32 fields, and leaves the code where
// integer multiply-adds can pack it (e2m1Magnitudes8; the twin tests check it against the
// reference codes).
FA4JIT_HD float e2m1MagnitudeCodeField(float x) {
  constexpr float kMagic = 0x1p23f;
#if defined(__CUDA_ARCH__)
  const float y = fabsf(x);
  const float fine = __fmaf_rn(y, 2.0f, kMagic), unit = __fadd_rn(y, kMagic + 2.0f),
              coarse = __fmaf_rn(y, 0.5f, kMagic + 4.0f);
  return fminf(fminf(fine, unit), fminf(coarse, kMagic + 7.0f));
#else
  const float y = std::fabs(x);
  const float fine = std::fma(y, 2.0f, kMagic), unit = y + (kMagic + 2.0f), coarse = std::fma(y, 0.5f, kMagic + 4.0f);
  return std::fmin(std::fmin(fine, unit), std::fmin(coarse, kMagic + 7.0f));
#endif
}

FA4JIT_HD uint32_t e2m1MagnitudeCode(float x) { return floatAsBits(e2m1MagnitudeCodeField(x)) & 7u; }

// ---- Eight E2M1 codes in one word (the FP4 quantizers' software path) --------------------------
// Magnitude codes of x[0..7] (not NaN), code n in bits 4n..4n+2, sign bits clear.
FA4JIT_HD uint32_t e2m1Magnitudes8(const float (&x)[8]) {
  uint32_t pair[4];
  for (int i = 0; i < 4; ++i) // bits 0..7: code 2i, code 2i + 1
    pair[i] = floatAsBits(e2m1MagnitudeCodeField(x[2 * i + 1])) * 16u + floatAsBits(e2m1MagnitudeCodeField(x[2 * i]));
  // bits 0..15: pairs 0, 1 (and 2, 3); what lies above bit 15 is dropped by the PRMT
  const uint32_t lo = pair[1] * 256u + pair[0], hi = pair[3] * 256u + pair[2];
  return bytePerm(lo, hi, 0x5410u);
}

// E2M1's sign bits (bit 4n+3) of eight elements given as 16-bit floats (BF16 or FP16), two per
// word, element 2j in the low half of w[j]: four PRMTs gather the sign bits as whole bytes, one
// select keeps the even elements' in low nibbles and the odd elements' in high nibbles. A quotient
// by a positive scale has its dividend's sign, so the payload takes the signs of the input.
FA4JIT_HD uint32_t e2m1SignsOfHalves8(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) {
  // bytes 1, 3 of each word replicated from their sign bits: elements 0..3, then 4..7
  const uint32_t s03 = bytePermSignReplicating(w0, w1, 0xFDB9u), s47 = bytePermSignReplicating(w2, w3, 0xFDB9u);
  const uint32_t even = bytePerm(s03, s47, 0x6420u), odd = bytePerm(s03, s47, 0x7531u);
  return ((even & 0x0F0F0F0Fu) | (odd & 0xF0F0F0F0u)) & 0x88888888u;
}

// The same for eight FP32 values (sign bit 7 of byte 3): PRMTs gather the even elements' and the
// odd elements' as bytes.
FA4JIT_HD uint32_t e2m1SignsOfFloats8(const float (&x)[8]) {
  uint32_t pair[4]; // bytes 0, 1: the signs of elements n and n + 2 (n = 0, 1, 4, 5)
  for (int i = 0; i < 4; ++i) {
    const int n = (i / 2) * 4 + i % 2;
    pair[i] = bytePermSignReplicating(floatAsBits(x[n]), floatAsBits(x[n + 2]), 0xFBu);
  }
  const uint32_t even = bytePerm(pair[0], pair[2], 0x5410u), odd = bytePerm(pair[1], pair[3], 0x5410u);
  return ((even & 0x0F0F0F0Fu) | (odd & 0xF0F0F0F0u)) & 0x88888888u;
}

FA4JIT_HD uint8_t floatToE2M1Soft(float x) {
  const uint32_t u = floatAsBits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN: positive max, as the PTX conversion does
    return 0x7u;
  return static_cast<uint8_t>(((u >> 28) & 0x8u) | e2m1MagnitudeCode(x));
}

// Two values into one byte: `lo` in bits 0..3 (the element with the lower index), `hi` in 4..7.
FA4JIT_HD uint8_t floatsToE2M1x2(float lo, float hi) {
#if FA4JIT_HAS_PTX_E2M1
  uint16_t r;
  // cvt packs its first source operand into the upper nibble.
  asm("{\n .reg .b8 t;\n cvt.rn.satfinite.e2m1x2.f32 t, %1, %2;\n mov.b16 %0, {t, 0};\n}"
      : "=h"(r)
      : "f"(hi), "f"(lo));
  return static_cast<uint8_t>(r);
#else
  return static_cast<uint8_t>(floatToE2M1Soft(lo) | (floatToE2M1Soft(hi) << 4));
#endif
}

// floatsToE2M1x2 for inputs known not to be NaN (the quantizers zero non-finite elements first):
// the software path then skips the NaN test.
FA4JIT_HD uint32_t finiteFloatsToE2M1x2(float lo, float hi) {
#if FA4JIT_HAS_PTX_E2M1
  return floatsToE2M1x2(lo, hi);
#else
  const uint32_t sign_lo = (floatAsBits(lo) >> 28) & 0x8u, sign_hi = (floatAsBits(hi) >> 24) & 0x80u;
  return sign_lo | e2m1MagnitudeCode(lo) | sign_hi | (e2m1MagnitudeCode(hi) << 4);
#endif
}

// Eight values known not to be NaN, code n in bits 4n..4n+3 (the payload's order); `signs` holds
// their sign bits at bits 4n + 3 (e2m1SignsOfHalves8 or e2m1SignsOfFloats8).
FA4JIT_HD uint32_t finiteFloatsToE2M1x8(const float (&x)[8], uint32_t signs) {
#if FA4JIT_HAS_PTX_E2M1
  (void)signs;
  uint32_t w = 0u;
  for (int i = 0; i < 4; ++i)
    w |= finiteFloatsToE2M1x2(x[2 * i], x[2 * i + 1]) << (8 * i);
  return w;
#else
  return e2m1Magnitudes8(x) | signs;
#endif
}
FA4JIT_HD uint32_t finiteFloatsToE2M1x8(const float (&x)[8]) {
#if FA4JIT_HAS_PTX_E2M1
  return finiteFloatsToE2M1x8(x, 0u);
#else
  return finiteFloatsToE2M1x8(x, e2m1SignsOfFloats8(x));
#endif
}

FA4JIT_HD uint8_t floatToE2M1(float x) {
#if FA4JIT_HAS_PTX_E2M1
  return static_cast<uint8_t>(floatsToE2M1x2(x, 0.0f) & 0xFu);
#else
  return floatToE2M1Soft(x);
#endif
}

// Magnitude of code & 7, exact: codes 2..7 are normal (exponent (m >> 1) - 1, one mantissa bit),
// code 1 is the subnormal 0.5.
FA4JIT_HD float e2m1MagnitudeToFloat(uint32_t m) {
  m &= 7u;
  if (m < 2u)
    return m == 0u ? 0.0f : 0.5f;
  return bitsAsFloat(((126u + (m >> 1)) << 23) | ((m & 1u) << 22));
}

FA4JIT_HD float e2m1ToFloat(uint8_t code4) {
  const float mag = e2m1MagnitudeToFloat(code4);
  return (code4 & 0x8u) ? -mag : mag;
}

// ---- E4M3FN (FP8): bias 7, no Inf, 0x7F/0xFF NaN, max 448, subnormal step 2^-9 -----------------
FA4JIT_HD uint8_t floatToE4M3Soft(float x) {
  const uint32_t u = floatAsBits(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u)
    return 0x7Fu;
  const uint32_t sign = (u >> 24) & 0x80u;
  if (a > 0x43E00000u) // |x| > 448, ±Inf: satfinite
    return static_cast<uint8_t>(sign | 0x7Eu);
  return static_cast<uint8_t>(sign | roundMagnitudeRne<3, 7>(a));
}

// Two values into two bytes: `lo` in bits 0..7 (the lower address), `hi` in bits 8..15.
FA4JIT_HD uint16_t floatsToE4M3x2(float lo, float hi) {
#if FA4JIT_HAS_PTX_E4M3
  uint16_t r;
  // cvt packs its first source operand into the upper byte.
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<uint16_t>(floatToE4M3Soft(lo) | (floatToE4M3Soft(hi) << 8));
#endif
}

FA4JIT_HD uint8_t floatToE4M3(float x) {
#if FA4JIT_HAS_PTX_E4M3
  return static_cast<uint8_t>(floatsToE4M3x2(x, 0.0f) & 0xFFu);
#else
  return floatToE4M3Soft(x);
#endif
}

FA4JIT_HD float e4m3ToFloat(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  const uint32_t e = (bits >> 3) & 0xFu;
  const uint32_t m = bits & 0x7u;
  if (e == 0xFu && m == 0x7u)
    return bitsAsFloat(sign | 0x7FC00000u);
  if (e == 0u) // subnormal: m * 2^-9, exact in FP32
    return bitsAsFloat(sign | floatAsBits(static_cast<float>(m) * 0.001953125f));
  return bitsAsFloat(sign | ((e + 120u) << 23) | (m << 20));
}

// The same for every pattern but the NaN codes 0x7F / 0xFF: on sm_89+ two conversions (E4M3 to
// FP16 and FP16 to FP32, both exact) instead of the branches of the field arithmetic.
FA4JIT_HD float e4m3ToFloatNotNan(uint8_t bits) {
#if FA4JIT_HAS_PTX_E4M3
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(static_cast<uint16_t>(bits)));
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<uint16_t>(h2 & 0xFFFFu)));
  return f;
#else
  return e4m3ToFloat(bits);
#endif
}

// ---- UE4M3: the NVFP4 block scale (E4M3 without a sign) ----------------------------------------
// Negative inputs and -0 give 0 (a scale is never negative; the sign bit is not stored); NaN gives
// the NaN pattern 0x7F; otherwise as E4M3 (RNE, satfinite at 448).
FA4JIT_HD uint8_t floatToUE4M3(float x) {
  const uint32_t u = floatAsBits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7Fu;
  if (u & 0x80000000u)
    return 0u;
  return floatToE4M3(x);
}

// Bit 7 is not part of the format and is ignored.
FA4JIT_HD float ue4m3ToFloat(uint8_t bits) { return e4m3ToFloat(static_cast<uint8_t>(bits & 0x7Fu)); }

// ---- UE8M0: 2^(bits - 127), the MX block scale; 0xFF is NaN ------------------------------------
FA4JIT_HD uint8_t exponentToUE8M0(int exponent) {
  exponent = exponent < -127 ? -127 : (exponent > 127 ? 127 : exponent);
  return static_cast<uint8_t>(exponent + 127);
}

FA4JIT_HD int ue8m0Exponent(uint8_t bits) { return static_cast<int>(bits) - 127; }

FA4JIT_HD float ue8m0ToFloat(uint8_t bits) {
  if (bits == 0xFFu)
    return bitsAsFloat(0x7FC00000u);
  return exp2Int(ue8m0Exponent(bits)); // 2^-127 is an FP32 subnormal, still exact
}

// ---- BF16 --------------------------------------------------------------------------------------
FA4JIT_HD uint16_t floatToBF16Soft(float x) {
  const uint32_t u = floatAsBits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FFFu;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

FA4JIT_HD uint16_t floatToBF16(float x) {
#if FA4JIT_HAS_PTX_BF16
  uint16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
#else
  return floatToBF16Soft(x);
#endif
}

FA4JIT_HD float bf16ToFloat(uint16_t bits) { return bitsAsFloat(static_cast<uint32_t>(bits) << 16); }

// ---- Scale-factor layout of the tcgen05 block-scaled MMA (NUMERICS.md §1.1) --------------------
// 512-byte atoms of 128 rows x 4 scale columns, scale columns fastest across atoms; inside an atom
// the 128 rows are 4 groups of 32, (row % 32) selects a 16-byte line holding the 4 groups' 4
// scales each: that is how one warp's 32 TMEM lanes see their 4 sub-partitions' scales.
FA4JIT_HD int64_t scaleFactorOffset(int r, int j, int scale_cols) {
  const int64_t atoms_per_row_block = (scale_cols + 3) / 4;
  const int64_t atom = static_cast<int64_t>(r / 128) * atoms_per_row_block + j / 4;
  return atom * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (j % 4);
}

// The same for a row-major encoder's own (non-negative) row and block: unsigned, so the divisions
// are shifts (the signed form costs a dozen integer instructions per 16-element block).
template <int kScaleCols> FA4JIT_HD int64_t scaleFactorOffsetOf(uint32_t r, uint32_t j) {
  constexpr uint32_t kAtomsPerRowBlock = (kScaleCols + 3) / 4;
  const uint64_t atom = static_cast<uint64_t>(r / 128u) * kAtomsPerRowBlock + j / 4u;
  return static_cast<int64_t>(atom * 512u + (r % 32u) * 16u + ((r % 128u) / 32u) * 4u + (j % 4u));
}

FA4JIT_HD int64_t scaleFactorBytes(int rows, int scale_cols) {
  return static_cast<int64_t>((rows + 127) / 128) * ((scale_cols + 3) / 4) * 512;
}

// ---- Widening E2M1 codes to E4M3 bytes (Hopper has FP8 tensor cores but no FP4) ----------------
// E4M3(E2M1[c] * scale) depends on the magnitude code only up to the sign, so 8 bytes (one PRMT
// source pair) hold the whole 16-entry table: bytes 0..3 of `lo` are magnitude codes 0..3, bytes
// 0..3 of `hi` codes 4..7, and the sign bit is moved from bit 3 of the code to bit 7 of the byte.
struct E2M1ToE4M3Table {
  uint32_t lo, hi;
};

// Eight E4M3 bytes: byte n of `lo` is element n (n < 4), byte n - 4 of `hi` element n.
struct E4M3x8 {
  uint32_t lo, hi;
};

// Table entries E4M3(E2M1[m] * scale), the product formed in FP32 (exact when scale has at most
// 22 significant bits, e.g. a UE4M3 scale times a power of two: NVFP4 widens with one rounding).
FA4JIT_HD E2M1ToE4M3Table e2m1ToE4M3TableScaled(float scale) {
  uint32_t words[2];
  for (int w = 0; w < 2; ++w) {
    const uint32_t m = 4u * static_cast<uint32_t>(w);
    const uint32_t b01 = floatsToE4M3x2(e2m1MagnitudeToFloat(m) * scale,
                                        e2m1MagnitudeToFloat(m + 1) * scale);
    const uint32_t b23 = floatsToE4M3x2(e2m1MagnitudeToFloat(m + 2) * scale,
                                        e2m1MagnitudeToFloat(m + 3) * scale);
    words[w] = b01 | (b23 << 16);
  }
  return {words[0], words[1]};
}

// Entries E4M3(E2M1[m] * 2^k): exact for k in [-8, 6]; below, small codes round (to even) and
// flush; above, large codes saturate at 448. Any int k is accepted.
FA4JIT_HD E2M1ToE4M3Table e2m1ToE4M3TablePow2(int k) {
  // Beyond these bounds every entry is already 0 (6 * 2^-40 < 2^-10) or saturated (0.5 * 2^20).
  k = k < -40 ? -40 : (k > 20 ? 20 : k);
  return e2m1ToE4M3TableScaled(exp2Int(k));
}

// Same as e2m1ToE4M3TablePow2 for k in [-5, 6], where every nonzero entry is a normal E4M3: the
// byte of code m >= 2 is 4m + 8(k + 6) (E2M1's exponent/mantissa bits shifted into E4M3's with the
// bias difference added) and code 1 is 8(k + 6). Two IMADs instead of four conversions.
FA4JIT_HD E2M1ToE4M3Table e2m1ToE4M3TablePow2Normal(int k) {
  const uint32_t base = 8u * static_cast<uint32_t>(k + 6);
  return {base * 0x01010100u + 0x0C080000u, base * 0x01010101u + 0x1C181410u};
}

FA4JIT_HD uint8_t e2m1ToE4M3Byte(const E2M1ToE4M3Table &t, uint8_t code4) {
  const uint32_t m = code4 & 7u;
  const uint32_t word = m < 4u ? t.lo : t.hi;
  return static_cast<uint8_t>(((word >> (8u * (m & 3u))) & 0xFFu) | ((code4 & 0x8u) << 4));
}

// Eight packed codes (code n in bits 4n..4n+3, as the NVFP4/MXFP4 payload stores them) to eight
// E4M3 bytes: 2 PRMT for the magnitudes, 2 PRMT + masks to move the sign bits.
FA4JIT_HD E4M3x8 widenE2M1x8(const E2M1ToE4M3Table &t, uint32_t codes) {
  const uint32_t sel = codes & 0x77777777u;
  const uint32_t mag_lo = bytePerm(t.lo, t.hi, sel);
  const uint32_t mag_hi = bytePerm(t.lo, t.hi, sel >> 16);
  // Sign of code n is bit 4n+3: codes 0,2,4,6 have it at bit 7 of a byte of (codes << 4), codes
  // 1,3,5,7 at bit 7 of a byte of codes; PRMT interleaves those bytes.
  const uint32_t shifted = codes << 4;
  const uint32_t sign_lo = bytePerm(shifted, codes, 0x5140u) & 0x80808080u;
  const uint32_t sign_hi = bytePerm(shifted, codes, 0x7362u) & 0x80808080u;
  return {mag_lo | sign_lo, mag_hi | sign_hi};
}

// One payload byte (two codes, low nibble first) to two E4M3 bytes (low byte first).
FA4JIT_HD uint16_t widenE2M1x2(const E2M1ToE4M3Table &t, uint8_t codes) {
  const uint32_t c = codes;
  const uint32_t mag = bytePerm(t.lo, t.hi, c & 0x77u);
  const uint32_t sign = bytePerm(c << 4, c, 0x40u) & 0x8080u;
  return static_cast<uint16_t>((mag | sign) & 0xFFFFu);
}

} // namespace fa4jit::device
