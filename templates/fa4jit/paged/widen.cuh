#pragma once
// Decode's exact widening of cache codes to BF16 pairs (the operands of mma.sync m16n8k16), by bit
// placement and byte-permute tables. Host-compilable: the CPU tests run every code and scale
// through the same functions (bytePerm and the BF16 multiply emulated on the host).
#include "fa4jit/common.cuh"
#include "fa4jit/formats.cuh"
#include "fa4jit/paged/params.cuh"

namespace fa4jit::device::paged {

// d = a * b + c on two BF16 lanes, each rounded to nearest even. The products the callers form are
// exact (at most 8 significant bits each side), so c = -0 makes this an exact multiply.
FA4JIT_HD uint32_t bf16x2Fma(uint32_t a, uint32_t b, uint32_t c) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  uint32_t d = 0;
  for (int half = 0; half < 2; ++half) {
    const auto lane = [half](uint32_t w) { return bitsAsFloat(((w >> (16 * half)) & 0xFFFFu) << 16); };
    const float r = static_cast<float>(static_cast<double>(lane(a)) * lane(b) + lane(c));
    d |= static_cast<uint32_t>(floatToBF16Soft(r)) << (16 * half);
  }
  return d;
#endif
}
constexpr uint32_t kBf16x2NegZero = 0x80008000u;
constexpr uint32_t kBf16x2TwoTo120 = 0x7B807B80u;

// A UE4M3 scale as a BF16 pair, exactly: its 7 bits placed as BF16 exponent/mantissa bits are the
// value times 2^-120 (subnormals included), which one BF16 multiply by 2^120 restores.
FA4JIT_HD uint32_t ue4m3ToBf16x2(uint32_t bits) {
  const uint32_t h = (bits & 0x7Fu) << 4;
  return bf16x2Fma(h | (h << 16), kBf16x2TwoTo120, kBf16x2NegZero);
}

// Four E2M1 codes (16 bits, element 0 in the low nibble) as two BF16 pairs times `scale`, exact:
// the magnitudes from a byte-permute table, the signs moved into bit 15 of each half.
FA4JIT_HD void e2m1x4ToBf16(uint32_t codes, uint32_t scale, uint32_t &p01, uint32_t &p23) {
  const uint32_t sel = codes & 0x7777u;
  // BF16 of the magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}: low bytes, then high bytes
  const uint32_t lo = bytePerm(0xC0800000u, 0xC0804000u, sel);
  const uint32_t hi = bytePerm(0x3F3F3F00u, 0x40404040u, sel);
  const uint32_t m01 = bytePerm(lo, hi, 0x5140u) | ((codes << 12) & 0x8000u) | ((codes << 24) & 0x80000000u);
  const uint32_t m23 = bytePerm(lo, hi, 0x7362u) | ((codes << 4) & 0x8000u) | ((codes << 16) & 0x80000000u);
  p01 = bf16x2Fma(m01, scale, kBf16x2NegZero);
  p23 = bf16x2Fma(m23, scale, kBf16x2NegZero);
}

// Byte k of the words a and b (E4M3 codes of two keys) as one BF16 pair, exactly (the 2^-120 of
// the bit placement undone by one BF16 multiply). The NaN codes 0x7F / 0xFF read as +-480, so that
// bytes of a row past a sequence's length (multiplied by a P of 0) stay finite.
template <int k> FA4JIT_HD uint32_t e4m3PairToBf16(uint32_t a, uint32_t b) {
  // byte k of a into byte 1, byte k of b into byte 3: sign bits land on 15 and 31
  const uint32_t x = bytePerm(a, b, static_cast<uint32_t>(((4 + k) << 12) | (k << 4)));
  const uint32_t h = (x & 0x80008000u) | ((x >> 4) & 0x07F007F0u);
  return bf16x2Fma(h, kBf16x2TwoTo120, kBf16x2NegZero);
}

// A UE8M0 scale as a BF16 pair (2^-127 is BF16's subnormal 0x0040). The NaN byte reads as 0 here,
// the row's NaN travelling through P instead (so that rows which do not see it stay finite), and
// bytes above 252 (2^125, the largest a finite BF16 row can need) read as 252: a row past a
// sequence's length may hold any bytes, and its P of 0 must never meet an infinite V.
FA4JIT_HD uint32_t ue8m0ToBf16x2(uint32_t byte) {
  const uint32_t h = byte == kMxNaNScale ? 0u : (byte == 0u ? 0x0040u : (byte < 252u ? byte : 252u) << 7);
  return h | (h << 16);
}

} // namespace fa4jit::device::paged
