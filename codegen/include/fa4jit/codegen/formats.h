#pragma once
// Scalar number formats of DESIGN.md §1.1, bit-exact. One implementation shared by the host
// code, the CPU models and the tests; the device headers (templates/fa4jit/formats.cuh) are
// tested against these.
//
// Rounding is round-to-nearest-even (on the code/bit pattern) everywhere, with saturation where
// the PTX instruction the format mirrors saturates (`cvt.rn.satfinite.*`).
#include <cstdint>

namespace fa4jit::formats {

// ---- E2M1 (FP4): sign bit 3, magnitude code 0..7 in bits 0..2 -------------------------------
// Magnitudes indexed by code: {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
inline constexpr float kE2M1Magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
inline constexpr float kE2M1Max = 6.0f;
// Round to nearest, ties to the even code, saturate at ±6 (as cvt.rn.satfinite.e2m1x2.f32).
// NaN and ±Inf: defined in formats.cpp as the PTX instruction does, and tested.
uint8_t floatToE2M1(float x);
float e2m1ToFloat(uint8_t code4); // uses the low 4 bits

// ---- E4M3FN (FP8) --------------------------------------------------------------------------
inline constexpr float kE4M3Max = 448.0f;
uint8_t floatToE4M3(float x); // RNE, satfinite (±Inf and overflow -> ±448, NaN -> 0x7F)
float e4m3ToFloat(uint8_t bits);  // 0x7F/0xFF decode to NaN

// ---- UE4M3: unsigned E4M3, the NVFP4 block scale -------------------------------------------
uint8_t floatToUE4M3(float x); // RNE, satfinite to 448; negative and NaN -> defined (see .cpp)
float ue4m3ToFloat(uint8_t bits);

// ---- UE8M0: 2^(e-127), the MX block scale ---------------------------------------------------
// 0xFF is NaN. exponentToUE8M0 clamps to [-127, 127].
uint8_t exponentToUE8M0(int exponent);
float ue8m0ToFloat(uint8_t bits);
int ue8m0Exponent(uint8_t bits);

// ---- BF16 -----------------------------------------------------------------------------------
uint16_t floatToBF16(float x); // RNE; NaN stays NaN (quiet)
float bf16ToFloat(uint16_t bits);
inline float roundToBF16(float x) { return bf16ToFloat(floatToBF16(x)); }

} // namespace fa4jit::formats
