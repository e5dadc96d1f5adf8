#pragma once
// TMA tensor maps of the bf16 route's wgmma kernel with KvStaging::TensorMap: the producer thread
// loads Q, K and V tiles straight from the BF16 tensors (no repacking pass), 128-byte swizzled
// into exactly the column-block layout of smem_desc.cuh. Host-compilable: the runtime encodes the
// three maps (cuTensorMapEncodeTiled) and passes them by value as the kernel's second argument,
// declared __grid_constant__ so that the TMA unit reads them from parameter space.
//
// Encoding of each map (the runtime's tensorMapGeometry does exactly this):
//   a BF16 tensor [B][H][S][D] with element strides (batch, head, row, 1), dims innermost first
//   {D, S, H, B}, byte strides {row * 2, head * 2, batch * 2}, box {64, rows, 1, 1} with rows =
//   block_m (128 or 192) for Q and block_n for K and V, element strides 1, no interleave,
//   CU_TENSOR_MAP_SWIZZLE_128B, L2 promotion 256 B, out-of-bound elements zero-filled (rows past
//   seqlen read as zeros, which the kernel needs: P is 0 there and 0 * garbage could be NaN).
// One box is one 128-byte column block of D (64 elements) of `rows` rows: D / 64 boxes per tile.
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention_sm90 {

// CUtensorMap's 128 opaque bytes (cuda.h: 64-byte aligned).
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};

struct AttentionTensorMaps {
  TensorMap q, k, v;
};

constexpr int kTensorMapBoxColumns = 64; // BF16 elements per box row: one 128-byte column block

static_assert(sizeof(TensorMap) == 128, "CUtensorMap is 128 bytes");
static_assert(sizeof(AttentionTensorMaps) == 384 && alignof(AttentionTensorMaps) == 64,
              "AttentionTensorMaps layout changed");

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// One box of `map` at element coordinates {d0, row, head, batch} into shared memory at smem_dst
// (1024-byte aligned: the swizzle is a function of the address), completing on the mbarrier at
// bar with the box's bytes (out-of-bound rows count too: they arrive as zeros). `map` is the
// generic address of a __grid_constant__ kernel parameter.
FA4JIT_DEVICE void tensorMapLoad(uint32_t smem_dst, const TensorMap *map, int d0, int row, int head, int batch,
                                 uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
               "%4, %5}], [%6];\n" ::"r"(smem_dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(d0), "r"(row), "r"(head), "r"(batch), "r"(bar)
               : "memory");
#else
  (void)smem_dst, (void)map, (void)d0, (void)row, (void)head, (void)batch, (void)bar;
#endif
}

// A tile of `rows` rows from `row0` of (head, batch): the D / 64 boxes of its 128-byte column
// blocks, rows * 128 bytes apart (smem_desc.cuh's layout).
template <int kHeadDim, int kRows>
FA4JIT_DEVICE void tensorMapLoadTile(uint32_t smem_dst, const TensorMap *map, int row0, int head, int batch,
                                     uint32_t bar) {
#pragma unroll
  for (int c = 0; c < kHeadDim / kTensorMapBoxColumns; ++c)
    tensorMapLoad(smem_dst + c * kRows * 128, map, c * kTensorMapBoxColumns, row0, head, batch, bar);
}
#endif

} // namespace fa4jit::device::attention_sm90
