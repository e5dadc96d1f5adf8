// The host formats are the device formats compiled for the host: one implementation
// (templates/fa4jit/formats.cuh), so kernels, CPU models and tests cannot drift apart.
#include "fa4jit/codegen/formats.h"

#include "fa4jit/formats.cuh"

namespace fa4jit::formats {

uint8_t floatToE2M1(float x) { return device::floatToE2M1(x); }
float e2m1ToFloat(uint8_t code4) { return device::e2m1ToFloat(code4); }

uint8_t floatToE4M3(float x) { return device::floatToE4M3(x); }
float e4m3ToFloat(uint8_t bits) { return device::e4m3ToFloat(bits); }

uint8_t floatToUE4M3(float x) { return device::floatToUE4M3(x); }
float ue4m3ToFloat(uint8_t bits) { return device::ue4m3ToFloat(bits); }

uint8_t exponentToUE8M0(int exponent) { return device::exponentToUE8M0(exponent); }
float ue8m0ToFloat(uint8_t bits) { return device::ue8m0ToFloat(bits); }
int ue8m0Exponent(uint8_t bits) { return device::ue8m0Exponent(bits); }

uint16_t floatToBF16(float x) { return device::floatToBF16(x); }
float bf16ToFloat(uint16_t bits) { return device::bf16ToFloat(bits); }

} // namespace fa4jit::formats
