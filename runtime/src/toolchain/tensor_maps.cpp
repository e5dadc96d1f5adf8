#include "tensor_maps.h"

#include "driver_api.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace fa4jit::runtime {
namespace {

namespace ds = device::attention_sm90;

// The driver writes CUtensorMap's 128 opaque bytes, which the kernel reads as a TensorMap.
static_assert(sizeof(CUtensorMap) == sizeof(ds::TensorMap), "TensorMap must mirror CUtensorMap");

constexpr std::uint64_t kBf16Bytes = 2;
constexpr std::uint64_t kTmaAlignBytes = 16;          // base address and every byte stride
constexpr std::uint64_t kTmaMaxStrideBytes = 1ull << 40; // byte strides must stay below
constexpr std::int64_t kTmaMaxDim = std::int64_t(1) << 32; // dims must stay below
constexpr int kTmaMaxBoxRows = 256;

llvm::Error mapError(const char *operand, const llvm::Twine &problem) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), llvm::Twine(operand) + " tensor map: " + problem);
}

// A byte stride TMA accepts: a multiple of 16 below 2^40 (the stride of a [B][H][S][D] dimension).
llvm::Expected<std::uint64_t> byteStride(std::int64_t elements, const char *dim, const char *operand) {
  if (elements < 0)
    return mapError(operand, llvm::formatv("{0} stride {1} is negative, which TMA cannot describe", dim, elements));
  const std::uint64_t bytes = std::uint64_t(elements) * kBf16Bytes;
  if (bytes % kTmaAlignBytes != 0)
    return mapError(operand, llvm::formatv("{0} stride {1} elements ({2} bytes) is not a multiple of 16 bytes", dim,
                                           elements, bytes));
  if (bytes >= kTmaMaxStrideBytes)
    return mapError(operand, llvm::formatv("{0} stride {1} elements ({2} bytes) is not below TMA's 2^40 bytes", dim,
                                           elements, bytes));
  return bytes;
}

llvm::Error encodeOne(const DriverApi &api, const TensorDesc &tensor, int box_rows, const char *operand,
                      ds::TensorMap &out) {
  auto geometry = tensorMapGeometry(tensor, box_rows, operand);
  if (!geometry)
    return geometry.takeError();
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  // CUtensorMap is 128-byte aligned in cuda.h, TensorMap only 64 (all the driver needs): encode
  // into a CUtensorMap and copy its bytes rather than alias the two types.
  CUtensorMap encoded{};
  // OOB_FILL_NONE zero-fills elements past seqlen: the kernel relies on those rows being zeros.
  const CUresult result = api.cuTensorMapEncodeTiled(
      &encoded, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, reinterpret_cast<void *>(tensor.data), geometry->dims.data(),
      geometry->byte_strides.data(), geometry->box.data(), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (llvm::Error e = checkDriverResult(api, result, "cuTensorMapEncodeTiled"))
    return mapError(operand, llvm::toString(std::move(e)));
  std::memcpy(&out, &encoded, sizeof out);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<TensorMapGeometry> tensorMapGeometry(const TensorDesc &tensor, int box_rows, const char *operand) {
  if (tensor.dtype != DType::BF16)
    return mapError(operand, llvm::formatv("dtype is {0}; the TensorMap kernel loads BF16", toString(tensor.dtype)));
  static const char *const kDimNames[4] = {"batch", "heads", "seqlen", "head_dim"};
  for (int i = 0; i < 4; ++i)
    if (tensor.shape[i] <= 0 || tensor.shape[i] >= kTmaMaxDim)
      return mapError(operand, llvm::formatv("{0} is {1}; TMA needs every dim in [1, 2^32)", kDimNames[i],
                                             tensor.shape[i]));
  if (tensor.stride[3] != 1)
    return mapError(operand, llvm::formatv("head_dim stride is {0}; TMA needs the innermost dim contiguous (stride 1)",
                                           tensor.stride[3]));
  const std::int64_t D = tensor.shape[3];
  if (D % ds::kTensorMapBoxColumns != 0)
    return mapError(operand, llvm::formatv("head_dim {0} is not a multiple of {1}: boxes are 128-byte column blocks "
                                           "(the TensorMap kernel takes head dims 64, 128 and 256)",
                                           D, ds::kTensorMapBoxColumns));
  if (box_rows < 1 || box_rows > kTmaMaxBoxRows)
    return mapError(operand, llvm::formatv("box of {0} rows is outside TMA's [1, {1}]", box_rows, kTmaMaxBoxRows));
  if (tensor.data % kTmaAlignBytes != 0)
    return mapError(operand, llvm::formatv("base address {0:x} is not 16-byte aligned", tensor.data));
  auto row = byteStride(tensor.stride[2], "seqlen", operand);
  if (!row)
    return row.takeError();
  auto head = byteStride(tensor.stride[1], "heads", operand);
  if (!head)
    return head.takeError();
  auto batch = byteStride(tensor.stride[0], "batch", operand);
  if (!batch)
    return batch.takeError();
  TensorMapGeometry g;
  g.dims = {std::uint64_t(D), std::uint64_t(tensor.shape[2]), std::uint64_t(tensor.shape[1]),
            std::uint64_t(tensor.shape[0])};
  g.byte_strides = {*row, *head, *batch};
  g.box = {std::uint32_t(ds::kTensorMapBoxColumns), std::uint32_t(box_rows), 1, 1};
  return g;
}

llvm::Expected<ds::AttentionTensorMaps> encodeAttentionTensorMaps(const DriverApi &api, const TensorDesc &q,
                                                                 const TensorDesc &k, const TensorDesc &v,
                                                                 int block_m, int block_n) {
  ds::AttentionTensorMaps maps{};
  // Q's box is the CTA's whole query block; K's and V's one key tile.
  if (auto err = encodeOne(api, q, block_m, "q", maps.q))
    return err;
  if (auto err = encodeOne(api, k, block_n, "k", maps.k))
    return err;
  if (auto err = encodeOne(api, v, block_n, "v", maps.v))
    return err;
  return maps;
}

} // namespace fa4jit::runtime
