// Host quantizers of docs/NUMERICS.md §1: the reference every GPU quantizer is compared with bit
// for bit. Each division is the one docs/NUMERICS.md §1 writes, in FP32, followed by exactly one
// rounding to the target format (formats.cuh), so a kernel doing the same FP32 operations matches.
#include "fa4jit/codegen/block_formats.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "fa4jit/codegen/formats.h"
#include "fa4jit/formats.cuh"

namespace fa4jit::formats {
namespace {

constexpr int kNvfp4Block = 16;
constexpr int kMxfp4Block = 32;

llvm::Error shapeError(const char *what, const MatrixView &m, const char *why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s of a %d x %d matrix: %s", what,
                                 m.rows, m.cols, why);
}

llvm::Error checkNotEmpty(const char *what, const MatrixView &m) {
  if (m.rows <= 0 || m.cols <= 0)
    return shapeError(what, m, "the matrix is empty");
  assert(m.data != nullptr && "non-empty MatrixView without data");
  return llvm::Error::success();
}

llvm::Error checkPaddedCols(const char *what, const MatrixView &m, int padded_cols, int multiple) {
  if (padded_cols < m.cols || padded_cols % multiple != 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s of a %d x %d matrix: padded_cols %d must be >= cols and a "
                                   "multiple of %d",
                                   what, m.rows, m.cols, padded_cols, multiple);
  return llvm::Error::success();
}

// Max |x| over the matrix; an error naming the first (row-major) non-finite element.
llvm::Expected<float> finiteAbsMax(const char *what, const MatrixView &m) {
  float amax = 0.0f;
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) {
      const float x = m.at(r, c);
      if (!std::isfinite(x))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "%s: non-finite value %f at row %d, column %d of a %d x %d "
                                       "matrix (only finite inputs can be quantized)",
                                       what, static_cast<double>(x), r, c, m.rows, m.cols);
      amax = std::max(amax, std::fabs(x));
    }
  return amax;
}

// A per-tensor scale amax / divisor, or 1 when that is 0 (amax = 0, or amax so small that the
// quotient underflows): then every element quantizes to 0 instead of dividing by zero.
float tensorScale(float amax, float divisor) {
  const float s = amax / divisor;
  return s > 0.0f ? s : 1.0f;
}

float blockAbsMax(const MatrixView &m, int r, int c0, int c1) {
  float amax = 0.0f;
  for (int c = c0; c < std::min(c1, m.cols); ++c)
    amax = std::max(amax, std::fabs(m.at(r, c)));
  return amax;
}

void putCode(std::vector<uint8_t> &payload, std::size_t row_bytes, int r, int c, uint8_t code) {
  uint8_t &byte = payload[static_cast<std::size_t>(r) * row_bytes + static_cast<std::size_t>(c) / 2];
  byte = static_cast<uint8_t>((c & 1) ? (byte & 0x0Fu) | (code << 4) : (byte & 0xF0u) | code);
}

uint8_t getCode(const std::vector<uint8_t> &payload, std::size_t row_bytes, int r, int c) {
  const uint8_t byte =
      payload[static_cast<std::size_t>(r) * row_bytes + static_cast<std::size_t>(c) / 2];
  return static_cast<uint8_t>((c & 1) ? byte >> 4 : byte & 0x0Fu);
}

// floor(log2(a)) for finite a > 0, exact for FP32 subnormals too.
int floorLog2(float a) { return std::ilogb(a); }

} // namespace

std::size_t scaleFactorOffset(int r, int j, int scale_cols) {
  assert(r >= 0 && j >= 0 && j < scale_cols);
  return static_cast<std::size_t>(device::scaleFactorOffset(r, j, scale_cols));
}

std::size_t scaleFactorBytes(int rows, int scale_cols) {
  assert(rows >= 0 && scale_cols >= 0);
  return static_cast<std::size_t>(device::scaleFactorBytes(rows, scale_cols));
}

// ---- NVFP4 ---------------------------------------------------------------------------------------

llvm::Expected<Nvfp4Matrix> quantizeNvfp4(const MatrixView &m) {
  constexpr const char *kWhat = "NVFP4 quantization";
  if (auto e = checkNotEmpty(kWhat, m))
    return e;
  if (m.cols % kNvfp4Block != 0)
    return shapeError(kWhat, m, "cols must be a multiple of 16 (one UE4M3 scale per 16 elements)");
  auto amax = finiteAbsMax(kWhat, m);
  if (!amax)
    return amax.takeError();

  Nvfp4Matrix q;
  q.rows = m.rows;
  q.cols = m.cols;
  q.global_scale = tensorScale(*amax, 448.0f * 6.0f);
  const float g = q.global_scale;
  const float six_g = 6.0f * g;
  const int blocks = m.cols / kNvfp4Block;
  const std::size_t row_bytes = static_cast<std::size_t>(m.cols) / 2;
  q.payload.assign(static_cast<std::size_t>(m.rows) * row_bytes, 0);
  q.scales.assign(scaleFactorBytes(m.rows, blocks), 0);
  for (int r = 0; r < m.rows; ++r)
    for (int b = 0; b < blocks; ++b) {
      const int c0 = b * kNvfp4Block;
      const float amax_b = blockAbsMax(m, r, c0, c0 + kNvfp4Block);
      const uint8_t s = amax_b == 0.0f ? 0 : floatToUE4M3(amax_b / six_g);
      q.scales[scaleFactorOffset(r, b, blocks)] = s;
      // s_b * g can underflow to 0 for subnormal g: those blocks hold 0 like s_b = 0.
      const float denom = ue4m3ToFloat(s) * g;
      for (int c = c0; c < c0 + kNvfp4Block; ++c)
        putCode(q.payload, row_bytes, r, c, denom == 0.0f ? 0 : floatToE2M1(m.at(r, c) / denom));
    }
  return q;
}

uint8_t Nvfp4Matrix::code(int r, int c) const {
  assert(r >= 0 && r < rows && c >= 0 && c < cols);
  return getCode(payload, static_cast<std::size_t>(cols) / 2, r, c);
}

float Nvfp4Matrix::blockScale(int r, int block) const {
  assert(r >= 0 && r < rows && block >= 0 && block < cols / kNvfp4Block);
  return ue4m3ToFloat(scales[scaleFactorOffset(r, block, cols / kNvfp4Block)]);
}

float Nvfp4Matrix::value(int r, int c) const {
  return e2m1ToFloat(code(r, c)) * blockScale(r, c / kNvfp4Block) * global_scale;
}

// ---- MXFP4 ---------------------------------------------------------------------------------------

llvm::Expected<Mxfp4Matrix> quantizeMxfp4(const MatrixView &m, int padded_cols) {
  constexpr const char *kWhat = "MXFP4 quantization";
  if (auto e = checkNotEmpty(kWhat, m))
    return e;
  if (auto e = checkPaddedCols(kWhat, m, padded_cols, kMxfp4Block))
    return e;
  if (auto amax = finiteAbsMax(kWhat, m); !amax)
    return amax.takeError();

  Mxfp4Matrix q;
  q.rows = m.rows;
  q.cols = m.cols;
  q.padded_cols = padded_cols;
  const int blocks = padded_cols / kMxfp4Block;
  const std::size_t row_bytes = static_cast<std::size_t>(padded_cols) / 2;
  q.payload.assign(static_cast<std::size_t>(m.rows) * row_bytes, 0);
  q.scales.assign(scaleFactorBytes(m.rows, blocks), 0);
  for (int r = 0; r < m.rows; ++r)
    for (int b = 0; b < blocks; ++b) {
      const int c0 = b * kMxfp4Block;
      const float amax_b = blockAbsMax(m, r, c0, c0 + kMxfp4Block);
      const int e = amax_b == 0.0f ? -127 : std::clamp(floorLog2(amax_b) - 2, -127, 127);
      q.scales[scaleFactorOffset(r, b, blocks)] = exponentToUE8M0(e);
      const float inv = device::exp2Int(-e); // exact: -e in [-127, 127]
      for (int c = c0; c < std::min(c0 + kMxfp4Block, m.cols); ++c)
        putCode(q.payload, row_bytes, r, c, floatToE2M1(m.at(r, c) * inv));
    }
  return q;
}

uint8_t Mxfp4Matrix::code(int r, int c) const {
  assert(r >= 0 && r < rows && c >= 0 && c < padded_cols);
  return getCode(payload, static_cast<std::size_t>(padded_cols) / 2, r, c);
}

int Mxfp4Matrix::blockExponent(int r, int block) const {
  assert(r >= 0 && r < rows && block >= 0 && block < padded_cols / kMxfp4Block);
  return ue8m0Exponent(scales[scaleFactorOffset(r, block, padded_cols / kMxfp4Block)]);
}

int Mxfp4Matrix::maxBlockExponent() const {
  int e = -127;
  for (int r = 0; r < rows; ++r)
    for (int b = 0; b < padded_cols / kMxfp4Block; ++b)
      e = std::max(e, blockExponent(r, b));
  return e;
}

float Mxfp4Matrix::value(int r, int c) const {
  return std::ldexp(e2m1ToFloat(code(r, c)), blockExponent(r, c / kMxfp4Block));
}

// ---- FP8 per tensor ------------------------------------------------------------------------------

llvm::Expected<Fp8Matrix> quantizeFp8PerTensor(const MatrixView &m, int padded_cols) {
  constexpr const char *kWhat = "FP8 per-tensor quantization";
  if (auto e = checkNotEmpty(kWhat, m))
    return e;
  if (auto e = checkPaddedCols(kWhat, m, padded_cols, 1))
    return e;
  auto amax = finiteAbsMax(kWhat, m);
  if (!amax)
    return amax.takeError();

  Fp8Matrix q;
  q.rows = m.rows;
  q.cols = m.cols;
  q.padded_cols = padded_cols;
  q.scale = tensorScale(*amax, kE4M3Max);
  q.payload.assign(static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(padded_cols), 0);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c)
      q.payload[static_cast<std::size_t>(r) * padded_cols + c] = floatToE4M3(m.at(r, c) / q.scale);
  return q;
}

// ---- E4M3 rows (Q/K) -------------------------------------------------------------------------

llvm::Expected<E4m3RowsMatrix> quantizeE4m3Rows(const MatrixView &m, int code_shift) {
  constexpr const char *kWhat = "E4M3 Q/K quantization";
  if (auto e = checkNotEmpty(kWhat, m))
    return e;
  if (code_shift < 3 || code_shift > 16)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: code_shift %d is not in [3, 16]", kWhat,
                                   code_shift);
  auto amax = finiteAbsMax(kWhat, m);
  if (!amax)
    return amax.takeError();
  E4m3RowsMatrix q;
  q.rows = m.rows;
  q.cols = m.cols;
  q.code_shift = code_shift;
  q.global_scale = tensorScale(*amax, 448.0f * 6.0f);
  const float d = std::ldexp(q.global_scale, code_shift); // exact
  const float cap = std::ldexp(2856.0f, -code_shift);      // 17/16 of 6 * 448 * 2^-shift, exact
  q.payload.assign(static_cast<std::size_t>(m.rows) * m.cols, 0);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c)
      q.payload[static_cast<std::size_t>(r) * m.cols + c] = floatToE4M3(std::clamp(m.at(r, c) / d, -cap, cap));
  return q;
}

float E4m3RowsMatrix::code(int r, int c) const {
  assert(r >= 0 && r < rows && c >= 0 && c < cols);
  return e4m3ToFloat(payload[static_cast<std::size_t>(r) * cols + c]);
}

float Fp8Matrix::value(int r, int c) const {
  assert(r >= 0 && r < rows && c >= 0 && c < padded_cols);
  return e4m3ToFloat(payload[static_cast<std::size_t>(r) * padded_cols + c]) * scale;
}

} // namespace fa4jit::formats
