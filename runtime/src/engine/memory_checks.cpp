// Engine::checkDeviceMemory: the driver's view of a caller's pointer, so that a host pointer or a
// tensor that runs past its allocation is an error naming the tensor, not an illegal address that
// would kill the caller's context. Host-side queries only: no synchronization.
#include "fa4jit/runtime/engine.h"

#include "fa4jit/runtime/forward_validate.h"

#include "toolchain/driver_api.h"

#include "llvm/Support/FormatVariadic.h"

namespace fa4jit {

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

llvm::Error Engine::checkDeviceMemory(std::uint64_t address, std::uint64_t bytes, const char *name) const {
  const runtime::DriverApi &api = driver_.api();
  unsigned memory_type = 0;
  int ordinal = -1;
  CUdeviceptr start = 0;
  std::size_t size = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *values[] = {&memory_type, &ordinal, &start, &size};
  // (an address the driver does not know reads as memory type 0: no error from the call itself)
  const CUresult r = api.cuPointerGetAttributes(4, attributes, values, static_cast<CUdeviceptr>(address));
  if (r != CUDA_SUCCESS || memory_type != CU_MEMORYTYPE_DEVICE)
    return fail(llvm::formatv("{0}: {1:x} is not device memory (a host pointer, or memory of no CUDA "
                              "allocation); fa4jit takes device tensors only",
                              name, address));
  if (ordinal != device_.ordinal)
    return fail(llvm::formatv("{0}: device memory of device {1}; this engine runs on device {2}", name, ordinal,
                              device_.ordinal));
  if (address < start || address - start + bytes > size)
    return fail(llvm::formatv("{0}: its {1} bytes from {2:x} run past the end of their allocation ({3} bytes "
                              "from {4:x}): check the shape and strides",
                              name, bytes, address, size, std::uint64_t(start)));
  return llvm::Error::success();
}

llvm::Error Engine::checkTensorMemory(const TensorDesc &t, const char *name) const {
  std::uint64_t last = 0; // the last element's offset, in elements
  for (int i = 0; i < 4; ++i)
    last += std::uint64_t(t.shape[i] - 1) * std::uint64_t(t.stride[i]);
  return checkDeviceMemory(t.data, (last + 1) * std::uint64_t(runtime::elementBytes(t.dtype)), name);
}

llvm::Error Engine::writeNoKeysResult(const TensorDesc &o, std::uint64_t lse, void *stream) {
  const runtime::DriverApi &api = driver_.api();
  CUstream s = static_cast<CUstream>(stream);
  const std::uint64_t B = o.shape[0], H = o.shape[1], S = o.shape[2], D = o.shape[3];
  const bool contiguous = o.stride[2] == std::int64_t(D) && o.stride[1] == std::int64_t(S * D) &&
                          (B == 1 || o.stride[0] == std::int64_t(H * S * D));
  if (contiguous) {
    if (auto err = driver_.check(api.cuMemsetD16Async(o.data, 0, B * H * S * D, s), "cuMemsetD16Async"))
      return err;
  } else {
    for (std::uint64_t b = 0; b < B; ++b)
      for (std::uint64_t h = 0; h < H; ++h) {
        const CUdeviceptr rows = o.data + 2 * (b * o.stride[0] + h * o.stride[1]);
        const std::size_t pitch = S > 1 ? std::size_t(o.stride[2]) * 2 : std::size_t(D) * 2;
        if (auto err = driver_.check(api.cuMemsetD2D16Async(rows, pitch, 0, D, S, s), "cuMemsetD2D16Async"))
          return err;
      }
  }
  if (lse == 0)
    return llvm::Error::success();
  constexpr unsigned kMinusInfinity = 0xff800000u; // FP32 -inf
  return driver_.check(api.cuMemsetD32Async(lse, kMinusInfinity, B * H * S, s), "cuMemsetD32Async");
}

} // namespace fa4jit
