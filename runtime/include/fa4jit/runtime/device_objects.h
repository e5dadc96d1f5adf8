#pragma once
// Owning handles for device memory, streams and events (for launches and later timing). Each is
// created in the calling thread's current context (CudaDriver::makeCurrent) and released in its
// destructor; all are move-only. Every driver call is checked and reported by name.
#include "fa4jit/runtime/driver_library.h"

#include <llvm/Support/Error.h>

#include <cstddef>
#include <cstdint>

namespace fa4jit::runtime {

class DeviceBuffer {
public:
  static llvm::Expected<DeviceBuffer> allocate(const CudaDriver &driver, std::size_t bytes);
  // Device memory the caller owns (a framework's tensor): used in place, never freed here.
  static DeviceBuffer borrow(const CudaDriver &driver, std::uint64_t address, std::size_t bytes) {
    return DeviceBuffer(&driver, address, bytes, /*owned=*/false);
  }
  DeviceBuffer() = default; // empty: address 0, size 0
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  std::uint64_t address() const { return address_; } // CUdeviceptr; pass &address to a launch
  std::size_t size() const { return bytes_; }
  bool owned() const { return owned_; }
  llvm::Error copyFromHost(const void *src, std::size_t bytes, std::size_t offset = 0);
  llvm::Error copyToHost(void *dst, std::size_t bytes, std::size_t offset = 0) const;
  llvm::Error fill(std::uint8_t value);
  // Device-to-device copy of the first `bytes` of src (the copy-bandwidth ceiling of benchmarks).
  llvm::Error copyFrom(const DeviceBuffer &src, std::size_t bytes);

private:
  DeviceBuffer(const CudaDriver *driver, std::uint64_t address, std::size_t bytes, bool owned = true)
      : driver_(driver), address_(address), bytes_(bytes), owned_(owned) {}
  llvm::Error checkRange(std::size_t bytes, std::size_t offset) const;
  const CudaDriver *driver_ = nullptr;
  std::uint64_t address_ = 0;
  std::size_t bytes_ = 0;
  bool owned_ = true;
};

class Stream {
public:
  static llvm::Expected<Stream> create(const CudaDriver &driver);
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  ~Stream();

  void *handle() const { return handle_; } // CUstream
  llvm::Error synchronize() const;

private:
  Stream(const CudaDriver *driver, void *handle) : driver_(driver), handle_(handle) {}
  const CudaDriver *driver_ = nullptr;
  void *handle_ = nullptr;
};

class Event {
public:
  static llvm::Expected<Event> create(const CudaDriver &driver);
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  ~Event();

  llvm::Error record(void *stream = nullptr) const; // null: the legacy default stream
  llvm::Error synchronize() const;
  // Milliseconds between two recorded events (both must have completed, or this waits on end).
  static llvm::Expected<float> elapsedMs(const Event &start, const Event &end);

private:
  Event(const CudaDriver *driver, void *handle) : driver_(driver), handle_(handle) {}
  const CudaDriver *driver_ = nullptr;
  void *handle_ = nullptr;
};

} // namespace fa4jit::runtime
