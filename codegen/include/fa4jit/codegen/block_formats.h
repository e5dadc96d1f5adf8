#pragma once
// Block-scaled formats (docs/NUMERICS.md §1) on the host: NVFP4, MXFP4 and FP8-per-head
// quantize/dequantize of strided tensors, in the exchange layouts of docs/NUMERICS.md §1
// (packed payload, two codes per byte, low nibble first; scale factors in the tcgen05
// block-scaled MMA's 512-byte atoms). The GPU quantizer kernels are tested bit for bit against
// these functions.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "llvm/Support/Error.h"

namespace fa4jit::formats {

// A 2-D view of one head's matrix: element (r, c) at data[r * row_stride + c * col_stride].
struct MatrixView {
  const float *data = nullptr;
  int rows = 0, cols = 0;
  std::ptrdiff_t row_stride = 0, col_stride = 1;
  float at(int r, int c) const { return data[r * row_stride + c * col_stride]; }
};

// Byte offset of scale (row r, scale column j) in the SF layout (NUMERICS.md §1.1) of a tensor
// with `scale_cols` scale columns.
std::size_t scaleFactorOffset(int r, int j, int scale_cols);
// Bytes of an SF-layout scale tensor with rows padded to 128 and scale columns padded to 4.
std::size_t scaleFactorBytes(int rows, int scale_cols);

// NVFP4 along the columns of `m` (the reduction dimension): 16 elements per UE4M3 scale and one
// FP32 global scale. cols must be a multiple of 16. In FP32, as NUMERICS.md §1 writes it:
//   g = amax / 2688 (1 when that is 0: amax = 0 or an underflowing quotient);
//   s_b = amax_b == 0 ? 0 : UE4M3(amax_b / (6*g));  c = E2M1(x / (s_b*g)), or 0 when s_b*g == 0.
struct Nvfp4Matrix {
  int rows = 0, cols = 0;
  std::vector<uint8_t> payload; // rows x cols/2 bytes, row-major
  std::vector<uint8_t> scales;  // SF layout, scaleFactorBytes(rows, cols/16)
  float global_scale = 1.0f;    // g = amax / (448*6), 1 when amax == 0
  float value(int r, int c) const; // decoded E2M1 * UE4M3 * g
  uint8_t code(int r, int c) const; // 4-bit code (sign in bit 3)
  float blockScale(int r, int block) const; // decoded UE4M3 of block c/16
};
llvm::Expected<Nvfp4Matrix> quantizeNvfp4(const MatrixView &m);

// MXFP4 along the columns of `m`: 32 elements per UE8M0 scale. The payload row length is cols
// padded to `padded_cols` (>= cols, a multiple of 32; padding codes are 0).
//   E = clamp(floor(log2 amax_b) - 2, -127, 127), -127 for amax_b == 0;  c = E2M1(x * 2^-E).
// Blocks made only of padding get E = -127 (byte 0); SF padding (rows to 128, scale columns to
// 4) is zero bytes.
struct Mxfp4Matrix {
  int rows = 0, cols = 0, padded_cols = 0;
  std::vector<uint8_t> payload; // rows x padded_cols/2 bytes
  std::vector<uint8_t> scales;  // SF layout, scaleFactorBytes(rows, padded_cols/32)
  float value(int r, int c) const;
  uint8_t code(int r, int c) const;
  int blockExponent(int r, int block) const; // E of block c/32 (UE8M0 - 127)
  int maxBlockExponent() const;              // over all blocks (for the E4M3 widening shift)
};
llvm::Expected<Mxfp4Matrix> quantizeMxfp4(const MatrixView &m, int padded_cols);

// FP8 E4M3 with one FP32 scale: x ~ E4M3(x / s) * s, s = amax / 448 (1 when that is 0).
// padded_cols >= cols; padding bytes are 0.
struct Fp8Matrix {
  int rows = 0, cols = 0, padded_cols = 0;
  std::vector<uint8_t> payload; // rows x padded_cols
  float scale = 1.0f;
  float value(int r, int c) const;
};
llvm::Expected<Fp8Matrix> quantizeFp8PerTensor(const MatrixView &m, int padded_cols);

// E4M3 Q/K (docs/NUMERICS.md §1.4): code E4M3(clamp(x / (g * 2^code_shift), +-2856 * 2^-code_shift))
// with NVFP4's per-matrix global scale g = amax / (6 * 448): the image NVFP4's E4M3 widening would
// give, from x directly (the clamp, 17/16 of the largest nominal quotient, binds only for a
// subnormal g).
struct E4m3RowsMatrix {
  int rows = 0, cols = 0, code_shift = 0;
  float global_scale = 1.0f;    // g
  std::vector<uint8_t> payload; // [rows][cols] E4M3 codes
  float code(int r, int c) const; // the decoded code (the value fed to the tensor core)
  float value(int r, int c) const { return code(r, c) * std::ldexp(global_scale, code_shift); }
};
llvm::Expected<E4m3RowsMatrix> quantizeE4m3Rows(const MatrixView &m, int code_shift);

// Errors name what is wrong: non-finite input (with its row/column), column counts that are not
// a multiple of the block, padded_cols too small or misaligned, empty matrices. The caller adds
// the tensor and head.

} // namespace fa4jit::formats
