#include "fa4jit/runtime/device_objects.h"

#include "driver_api.h"

#include <fmt/format.h>

#include <utility>

namespace fa4jit::runtime {

// ---- DeviceBuffer
llvm::Expected<DeviceBuffer> DeviceBuffer::allocate(const CudaDriver &driver, std::size_t bytes) {
  CUdeviceptr ptr = 0;
  if (llvm::Error e = driver.check(driver.api().cuMemAlloc(&ptr, bytes),
                                   ("cuMemAlloc(" + std::to_string(bytes) + " bytes)").c_str()))
    return e;
  return DeviceBuffer(&driver, ptr, bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : driver_(other.driver_), address_(std::exchange(other.address_, 0)),
      bytes_(std::exchange(other.bytes_, 0)), owned_(std::exchange(other.owned_, true)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    this->~DeviceBuffer();
    driver_ = other.driver_;
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    owned_ = std::exchange(other.owned_, true);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (address_ && owned_)
    driver_->api().cuMemFree(address_);
  address_ = 0;
}

llvm::Error DeviceBuffer::checkRange(std::size_t bytes, std::size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        fmt::format("copy of {0} bytes at offset {1} exceeds a {2}-byte device buffer", bytes,
                      offset, bytes_));
  return llvm::Error::success();
}

llvm::Error DeviceBuffer::copyFromHost(const void *src, std::size_t bytes, std::size_t offset) {
  if (llvm::Error e = checkRange(bytes, offset))
    return e;
  return driver_->check(driver_->api().cuMemcpyHtoD(address_ + offset, src, bytes), "cuMemcpyHtoD");
}

llvm::Error DeviceBuffer::copyToHost(void *dst, std::size_t bytes, std::size_t offset) const {
  if (llvm::Error e = checkRange(bytes, offset))
    return e;
  return driver_->check(driver_->api().cuMemcpyDtoH(dst, address_ + offset, bytes), "cuMemcpyDtoH");
}

llvm::Error DeviceBuffer::copyFrom(const DeviceBuffer &src, std::size_t bytes) {
  if (llvm::Error e = checkRange(bytes, 0))
    return e;
  if (llvm::Error e = src.checkRange(bytes, 0))
    return e;
  return driver_->check(driver_->api().cuMemcpyDtoD(address_, src.address_, bytes), "cuMemcpyDtoD");
}

llvm::Error DeviceBuffer::fill(std::uint8_t value) {
  return driver_->check(driver_->api().cuMemsetD8(address_, value, bytes_), "cuMemsetD8");
}

// ---- Stream
llvm::Expected<Stream> Stream::create(const CudaDriver &driver) {
  CUstream s = nullptr;
  if (llvm::Error e = driver.check(driver.api().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
    return e;
  return Stream(&driver, s);
}

Stream::Stream(Stream &&other) noexcept
    : driver_(other.driver_), handle_(std::exchange(other.handle_, nullptr)) {}

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    this->~Stream();
    driver_ = other.driver_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  if (handle_)
    driver_->api().cuStreamDestroy(static_cast<CUstream>(handle_));
  handle_ = nullptr;
}

llvm::Error Stream::synchronize() const {
  return driver_->check(driver_->api().cuStreamSynchronize(static_cast<CUstream>(handle_)),
                        "cuStreamSynchronize");
}

// ---- Event
llvm::Expected<Event> Event::create(const CudaDriver &driver) {
  CUevent ev = nullptr;
  if (llvm::Error e = driver.check(driver.api().cuEventCreate(&ev, CU_EVENT_DEFAULT), "cuEventCreate"))
    return e;
  return Event(&driver, ev);
}

Event::Event(Event &&other) noexcept
    : driver_(other.driver_), handle_(std::exchange(other.handle_, nullptr)) {}

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    this->~Event();
    driver_ = other.driver_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (handle_)
    driver_->api().cuEventDestroy(static_cast<CUevent>(handle_));
  handle_ = nullptr;
}

llvm::Error Event::record(void *stream) const {
  return driver_->check(
      driver_->api().cuEventRecord(static_cast<CUevent>(handle_), static_cast<CUstream>(stream)),
      "cuEventRecord");
}

llvm::Error Event::synchronize() const {
  return driver_->check(driver_->api().cuEventSynchronize(static_cast<CUevent>(handle_)),
                        "cuEventSynchronize");
}

llvm::Expected<float> Event::elapsedMs(const Event &start, const Event &end) {
  if (llvm::Error e = end.synchronize())
    return e;
  float ms = 0.0f;
  if (llvm::Error e = end.driver_->check(
          end.driver_->api().cuEventElapsedTime(&ms, static_cast<CUevent>(start.handle_),
                                                static_cast<CUevent>(end.handle_)),
          "cuEventElapsedTime"))
    return e;
  return ms;
}

} // namespace fa4jit::runtime
