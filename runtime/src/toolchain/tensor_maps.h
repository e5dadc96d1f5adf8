#pragma once
// Private: the TMA tensor maps of the bf16 route's wgmma kernel with KvStaging::TensorMap, which
// loads Q, K and V tiles straight from the caller's BF16 tensors (templates/fa4jit/attention_sm90/
// tensor_maps.cuh documents the encoding). The geometry is a pure function, so that what TMA can
// and cannot describe is tested without a GPU; encoding it is one driver call per operand.
#include "fa4jit/attention_sm90/tensor_maps.cuh"
#include "fa4jit/runtime/engine.h"

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>

namespace fa4jit::runtime {

struct DriverApi; // driver_api.h

// One operand's map as cuTensorMapEncodeTiled takes it: innermost dimension first.
struct TensorMapGeometry {
  std::array<std::uint64_t, 4> dims;         // {D, S, H, B} elements
  std::array<std::uint64_t, 3> byte_strides; // {row, head, batch} bytes (D is contiguous)
  std::array<std::uint32_t, 4> box;          // {64, box_rows, 1, 1}: one 128-byte column block of box_rows rows
};

// The geometry of a BF16 [B][H][S][D] tensor loaded in boxes of box_rows rows, or an error naming
// `operand` ("q", "k", "v") and what TMA cannot describe: a base address not 16-byte aligned, a
// byte stride not a multiple of 16 or >= 2^40, an innermost stride other than 1, a D that is not a
// multiple of 64, a box_rows outside [1, 256], a dim of zero or >= 2^32, a dtype other than BF16.
llvm::Expected<TensorMapGeometry> tensorMapGeometry(const TensorDesc &tensor, int box_rows, const char *operand);

// The three maps the kernel takes as its second argument: Q in boxes of block_m (128 or 192) rows,
// K and V in boxes of block_n rows. A rejected geometry or a failed encode names the operand.
llvm::Expected<device::attention_sm90::AttentionTensorMaps> encodeAttentionTensorMaps(const DriverApi &api,
                                                                                     const TensorDesc &q,
                                                                                     const TensorDesc &k,
                                                                                     const TensorDesc &v, int block_m,
                                                                                     int block_n);

} // namespace fa4jit::runtime
