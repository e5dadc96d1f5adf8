#pragma once
// Private to the engine: how a workspace buffer grows.
#include "fa4jit/runtime/device_objects.h"

namespace fa4jit::engine_detail {

// Grows `buffer` to at least `bytes` (its old contents are not needed): kept when it already holds
// enough, so a steady stream of calls allocates nothing. `zeroed`: a grown buffer starts as zeros
// (a synchronous fill, done once, before any stream's launch).
inline llvm::Error ensureBytes(runtime::CudaDriver &driver, runtime::DeviceBuffer &buffer, std::size_t bytes,
                               bool zeroed = false) {
  if (buffer.size() >= bytes)
    return llvm::Error::success();
  buffer = runtime::DeviceBuffer{}; // free first
  auto grown = runtime::DeviceBuffer::allocate(driver, bytes);
  if (!grown)
    return grown.takeError();
  buffer = std::move(*grown);
  return zeroed ? buffer.fill(0) : llvm::Error::success();
}

} // namespace fa4jit::engine_detail
