#pragma once
// Scalar number formats of docs/NUMERICS.md §1, bit-exact. One implementation shared by the host
// code, the CPU models and the tests; the device headers (templates/fa4jit/formats.cuh) are
// tested against these.
//
// Rounding is round-to-nearest-even (on the code/bit pattern) everywhere, with saturation where
// the PTX instruction the format mirrors saturates (`cvt.rn.satfinite.*`). These are thin wrappers
// over templates/fa4jit/formats.cuh (namespace fa4jit::device), whose PTX paths were checked on
// an H200 against the software paths for all 2^32 FP32 inputs (E4M3, BF16).
// Every encoder keeps the sign of inputs that round to zero (-0.1 -> "-0"), and never flushes FP32
// subnormal inputs before rounding (they round to ±0 like any tiny value).
#include <cstdint>

namespace fa4jit::formats {

// ---- E2M1 (FP4): sign bit 3, magnitude code 0..7 in bits 0..2 -------------------------------
// Magnitudes indexed by code: {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
inline constexpr float kE2M1Magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
inline constexpr float kE2M1Max = 6.0f;
// Round to nearest, ties to the even code, saturate at ±6 (as cvt.rn.satfinite.e2m1x2.f32).
// ±Inf -> ±6 (0x7 | sign); NaN -> +6 (0x7): E2M1 has no NaN and the instruction gives +MAX_NORM.
uint8_t floatToE2M1(float x);
float e2m1ToFloat(uint8_t code4); // uses the low 4 bits; 0x8 decodes to -0.0f

// ---- E4M3FN (FP8) --------------------------------------------------------------------------
inline constexpr float kE4M3Max = 448.0f;
// RNE, satfinite: ±Inf and |x| > 448 -> ±448 (0x7E | sign); NaN of either sign -> 0x7F.
// Subnormals: step 2^-9, |x| <= 2^-10 rounds to ±0 (ties to even).
uint8_t floatToE4M3(float x);
float e4m3ToFloat(uint8_t bits); // 0x7F/0xFF decode to NaN (quiet, sign kept); 0x80 to -0.0f

// ---- UE4M3: unsigned E4M3, the NVFP4 block scale -------------------------------------------
// RNE, satfinite to 448 (+Inf -> 448 = 0x7E). Negative values, -0 and -Inf -> 0 (a scale has no
// sign bit); NaN -> 0x7F (the NaN pattern).
uint8_t floatToUE4M3(float x);
float ue4m3ToFloat(uint8_t bits); // bit 7 is not part of the format and is ignored

// ---- UE8M0: 2^(e-127), the MX block scale ---------------------------------------------------
// 0xFF is NaN. exponentToUE8M0 clamps to [-127, 127]; ue8m0ToFloat(0) = 2^-127 (an FP32
// subnormal, exact); ue8m0Exponent returns bits - 127 (128 for the NaN pattern 0xFF).
uint8_t exponentToUE8M0(int exponent);
float ue8m0ToFloat(uint8_t bits);
int ue8m0Exponent(uint8_t bits);

// ---- BF16 -----------------------------------------------------------------------------------
// RNE, no saturation (as cvt.rn.bf16.f32): overflow -> ±Inf, ±Inf kept, NaN -> 0x7FFF.
uint16_t floatToBF16(float x);
float bf16ToFloat(uint16_t bits);
inline float roundToBF16(float x) { return bf16ToFloat(floatToBF16(x)); }

} // namespace fa4jit::formats
