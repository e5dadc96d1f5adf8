#pragma once
// Two FP16 values in one register (lane 0 in the low half) and the half2 arithmetic the FP16
// paths run on them, one SASS instruction per pair each (F2FP, HSET2, HFMA2, HADD2, HMNMX2) but
// the exp2 (two MUFU.EX2.F16 and a PRMT): Direct-P's classifiers (p_directp.cuh), nvfp8's P
// (p_nvfp8.cuh) and the FP16 scores (scores_fp16.cuh).
#include "fa4jit/common.cuh"
#include "fa4jit/score_terms.cuh"

namespace fa4jit::device::attention {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
struct Half2 {
  uint32_t u;
};
FA4JIT_DEVICE Half2 half2Splat(uint32_t half_bits) { return {half_bits | (half_bits << 16)}; }
FA4JIT_DEVICE Half2 half2FromFloats(float lo, float hi) { // round to nearest even, as directpThresholdInput
  Half2 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r.u) : "f"(hi), "f"(lo));
  return r;
}
FA4JIT_DEVICE Half2 directpGeq(Half2 a, Half2 b) { // 1.0 or 0.0 per lane; NaN compares false
  Half2 r;
  asm("set.ge.f16x2.f16x2 %0, %1, %2;" : "=r"(r.u) : "r"(a.u), "r"(b.u));
  return r;
}
FA4JIT_DEVICE Half2 directpFmaV(Half2 a, Half2 b, Half2 c) {
  Half2 r;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r.u) : "r"(a.u), "r"(b.u), "r"(c.u));
  return r;
}
FA4JIT_DEVICE Half2 directpAddV(Half2 a, Half2 b) {
  Half2 r;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r.u) : "r"(a.u), "r"(b.u));
  return r;
}
FA4JIT_DEVICE Half2 half2FmaSat(Half2 a, Half2 b, Half2 c) { // clamped to [0, 1], NaN -> 0
  Half2 r;
  asm("fma.rn.sat.f16x2 %0, %1, %2, %3;" : "=r"(r.u) : "r"(a.u), "r"(b.u), "r"(c.u));
  return r;
}
FA4JIT_DEVICE Half2 half2Max(Half2 a, Half2 b) {
  Half2 r;
  asm("max.f16x2 %0, %1, %2;" : "=r"(r.u) : "r"(a.u), "r"(b.u));
  return r;
}
// 2^x per lane (MUFU.EX2.F16, a lane at a time: the packed form is two MUFU ops and a PRMT).
FA4JIT_DEVICE Half2 half2Exp2(Half2 x) {
  Half2 r;
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(r.u) : "r"(x.u));
  return r;
}
// 2^x per lane without the MUFU (score_terms.cuh's exp2PolyHalf, the same steps): one HMNMX2,
// three HADD2, three HFMA2, an HMUL2, a shift and a LOP3 per pair, on the FMA and integer pipes.
FA4JIT_DEVICE Half2 half2Exp2Poly(Half2 x) {
  Half2 xc, s, j, f, q = half2Splat(exp2PolyCoefficientBits(3));
  asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(xc.u) : "r"(x.u), "r"(half2Splat(kExp2PolyFloorBits).u));
  s = directpAddV(xc, half2Splat(kExp2PolyMagicBits));
  j = directpAddV(s, half2Splat(kExp2PolyMagicBits | 0x8000u)); // s - 1551
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(f.u) : "r"(xc.u), "r"(j.u));
#pragma unroll
  for (int k = 2; k >= 0; --k)
    q = directpFmaV(q, f, half2Splat(exp2PolyCoefficientBits(k)));
  const Half2 scale{(s.u << 10) & 0x7C007C00u}; // 2^j per lane: exponent field j + 15, no mantissa
  Half2 r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r.u) : "r"(q.u), "r"(scale.u));
  return r;
}
// Both lanes to E4M3 (round to nearest even, saturating at 448): the high lane in the high byte.
FA4JIT_DEVICE uint32_t half2ToE4m3x2(Half2 v) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(r) : "r"(v.u));
  return r;
}
// Either half as FP32 (exact).
FA4JIT_DEVICE float halfLowToFloat(uint32_t v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(v & 0xffffu)));
  return f;
}
FA4JIT_DEVICE float halfHighToFloat(uint32_t v) { return halfLowToFloat(v >> 16); }

#endif

} // namespace fa4jit::device::attention
