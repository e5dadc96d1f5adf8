#pragma once
// The constants baked into one quantizer kernel. The code generator emits a struct with exactly
// these static constexpr members and instantiates the passes with it; QuantizeTraits checks every
// field. The enum carries the numeric values of fa4jit::QuantFormat in codegen/spec.h.
//
//   struct MyConfig {
//     static constexpr Format format;         // Nvfp4 or E4m3Rows (Q/K), Mxfp4 or Fp8 (V^T)
//     static constexpr bool transposed;       // V^T (keys contiguous); false for NVFP4 rows
//     static constexpr bool input_fp32;       // x is fp32
//     static constexpr bool input_fp16;       // x is fp16; neither: bf16
//     static constexpr bool keys_permuted16;  // V^T keys within each 16 in Hopper register-P order
//     static constexpr int head_dim;          // 64, 128, 256
//     static constexpr int threads;           // CTA size of both passes
//     static constexpr int code_shift;        // E4m3Rows only (absent elsewhere): the kernel's
//                                             // qk_widen_shift
//   };
#include "fa4jit/common.cuh"
#include "fa4jit/quantize/params.cuh"

namespace fa4jit::device::quantize {

enum class Format : int { Nvfp4 = 0, Mxfp4 = 1, Fp8 = 2, E4m3Rows = 4 };

// C::code_shift where the config has it (E4M3 rows), else 0.
template <class C> struct CodeShiftOf {
  template <class X> FA4JIT_HD static constexpr int get(decltype(&X::code_shift)) { return X::code_shift; }
  template <class X> FA4JIT_HD static constexpr int get(...) { return 0; }
  static constexpr int value = get<C>(nullptr);
};

template <class C> struct QuantizeTraits {
  static constexpr Format kFormat = C::format;
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kThreads = C::threads;
  static constexpr bool kInputFp32 = C::input_fp32;
  static constexpr bool kInputFp16 = C::input_fp16;
  static constexpr bool kTransposed = C::transposed;
  static constexpr bool kPermuted = C::keys_permuted16;
  static constexpr bool kRowMajor = kFormat == Format::Nvfp4 || kFormat == Format::E4m3Rows;
  static constexpr int kCodeShift = CodeShiftOf<C>::value;

  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head_dim must be 64, 128 or 256");
  static_assert(!(kInputFp32 && kInputFp16), "x is fp32, fp16 or bf16");
  static_assert(kThreads >= 64 && kThreads <= 512 && (kThreads & (kThreads - 1)) == 0,
                "threads must be a power of two in [64, 512]");
  static_assert(kRowMajor != kTransposed,
                "NVFP4 and E4M3 Q/K are stored as rows; MXFP4 and FP8 V are stored transposed");
  static_assert(kFormat == Format::E4m3Rows ? kCodeShift >= 3 && kCodeShift <= 16 : kCodeShift == 0,
                "code_shift (E4M3 rows only) must be in [3, 16]");
  static_assert(kTransposed || !kPermuted, "only V^T permutes keys");

  // Elements per 16-byte load of x.
  static constexpr int kVec = kInputFp32 ? 4 : 8;
  static constexpr int kElemBytes = kInputFp32 ? 4 : 2;
  // The 16-bit inputs' bit pattern of +Inf: with the sign cleared, the bits of both BF16 and FP16
  // are ordered as the magnitudes are, and a NaN or Inf is at or above it.
  static constexpr uint32_t kInfBits16 = kInputFp16 ? 0x7C00u : 0x7F80u;
  static_assert(kHeadDim % kVec == 0, "a row of x is a whole number of 16-byte vectors");

  // NVFP4 and E4M3 rows: one thread per 16-element block; a CTA covers whole rows.
  static constexpr int kBlocksPerRow = kHeadDim / 16;
  static constexpr int kRowsPerCta = nvfp4RowsPerCta(kThreads, kHeadDim);
  static_assert(!kRowMajor || (kRowsPerCta >= 1 && 128 % kRowsPerCta == 0),
                "an NVFP4 CTA covers whole rows and tiles the 128-row scale atoms");
  static_assert(kBlocksPerRow % 4 == 0, "D/16 scale columns fill whole 4-column atoms (no column padding)");

  // V^T: a tile of 128 keys x kDims head-dim rows, staged in shared memory as FP32 [kDims][128 + 1]
  // (the +1 makes the 32 consecutive rows that a warp reads fall into distinct banks).
  static constexpr int kDims = vtDimsPerCta(kThreads);
  static constexpr int kTilePitch = kVtKeyTile + 1;
  static constexpr int kTileBytes = kDims * kTilePitch * 4;
  static_assert(!kTransposed || kHeadDim % kDims == 0, "V^T tiles of threads/4 rows must divide head_dim");
  static_assert(!kTransposed || kDims % kVec == 0, "a V^T tile row segment is a whole number of vectors");
  static_assert(!kTransposed || kTileBytes <= 48 * 1024,
                "the V^T tile must fit static shared memory (threads <= 256)");
};

} // namespace fa4jit::device::quantize
