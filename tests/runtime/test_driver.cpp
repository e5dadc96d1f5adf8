#include "kernels.h"

#include "fa4jit/runtime/compiler.h"
#include "fa4jit/runtime/device_objects.h"
#include "fa4jit/runtime/driver_library.h"
#include "fa4jit/runtime/kernel_module.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace fa4jit::runtime;

TEST_CASE("a missing driver is a clear error, not a crash", "[runtime][driver]") {
  DriverSearch search;
  search.candidates = {"/nonexistent/libcuda.so.1"};
  auto driver = CudaDriver::load(search);
  REQUIRE(!driver);
  const std::string message = llvm::toString(driver.takeError());
  CHECK_THAT(message, Catch::StartsWith("no CUDA driver"));
  CHECK_THAT(message, Catch::Contains("/nonexistent/libcuda.so.1"));
}

TEST_CASE("the process-wide driver either works or says why, every time", "[runtime][driver]") {
  auto first = CudaDriver::get();
  if (first) {
    CHECK(first->deviceCount() > 0); // a driver without devices is refused at load
    CHECK(first->driverVersion() >= 12000);
    return;
  }
  const std::string message = llvm::toString(first.takeError());
  // This machine (CI) has no libcuda; a GPU-less machine with a driver says "no CUDA device".
  CHECK((llvm::StringRef(message).startswith("no CUDA driver") ||
         llvm::StringRef(message).startswith("no CUDA device")));
  auto again = CudaDriver::get();
  REQUIRE(!again);
  CHECK(llvm::toString(again.takeError()) == message);
}

namespace {

CompileResult compileFor(const char *source, GpuArch arch) {
  CompileRequest r;
  r.source = source;
  r.options.arch = arch;
  auto result = compile(r);
  if (!result)
    FAIL(llvm::toString(result.takeError()));
  return std::move(*result);
}

CudaDriver &driverOrFail() {
  auto driver = CudaDriver::get();
  if (!driver)
    FAIL(llvm::toString(driver.takeError()));
  return *driver;
}


} // namespace

TEST_CASE("device properties of the GPU", "[gpu][driver]") {
  CudaDriver &driver = driverOrFail();
  auto info = driver.device(0);
  REQUIRE(static_cast<bool>(info));
  CHECK(!info->name.empty());
  CHECK(info->sm_count > 0);
  CHECK(info->cc_major >= 8);
  CHECK(info->max_shared_per_block_optin >= 48 * 1024);
  CHECK(info->total_memory_bytes > (size_t(1) << 30));
  auto bad = driver.device(driver.deviceCount());
  REQUIRE(!bad);
  CHECK_THAT(llvm::toString(bad.takeError()), Catch::Contains("no CUDA device with ordinal"));
  WARN(info->name << " " << info->smName() << ", " << info->sm_count << " SMs, driver "
                  << driver.driverVersionString());
}

TEST_CASE("load and launch a JIT-compiled kernel, check its output", "[gpu][driver]") {
  CudaDriver &driver = driverOrFail();
  auto info = driver.device(0);
  REQUIRE(static_cast<bool>(info));
  GpuArch arch{info->cc_major, info->cc_minor, info->cc_major == 9 ? ArchSuffix::ArchSpecific : ArchSuffix::None};
  CompileResult compiled = compileFor(kSaxpyKernel, arch);
  auto module = KernelModule::load(driver, 0, compiled.cubin);
  if (!module)
    FAIL(llvm::toString(module.takeError()));
  auto kernel = (*module)->kernel("saxpy");
  REQUIRE(static_cast<bool>(kernel));
  CHECK(kernel->info().static_shared_bytes == 1024);

  const int n = 1000;
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.5f * i;
    y[i] = 1.0f - i;
  }
  auto dx = DeviceBuffer::allocate(driver, n * sizeof(float));
  auto dy = DeviceBuffer::allocate(driver, n * sizeof(float));
  auto dout = DeviceBuffer::allocate(driver, n * sizeof(float));
  REQUIRE(static_cast<bool>(dx));
  REQUIRE(static_cast<bool>(dy));
  REQUIRE(static_cast<bool>(dout));
  REQUIRE_SUCCESS(dx->copyFromHost(x.data(), n * sizeof(float)));
  REQUIRE_SUCCESS(dy->copyFromHost(y.data(), n * sizeof(float)));
  REQUIRE_SUCCESS(dout->fill(0));
  float a = 3.0f;
  uint64_t px = dx->address(), py = dy->address(), po = dout->address();
  int count = n;
  void *args[] = {&a, &px, &py, &po, &count};
  auto stream = Stream::create(driver);
  REQUIRE(static_cast<bool>(stream));
  auto start = Event::create(driver), stop = Event::create(driver);
  REQUIRE(static_cast<bool>(start));
  REQUIRE(static_cast<bool>(stop));
  LaunchConfig launch;
  launch.grid.x = (n + 255) / 256;
  launch.block.x = 256;
  launch.stream = stream->handle();
  REQUIRE_SUCCESS(start->record(stream->handle()));
  REQUIRE_SUCCESS(kernel->launch(launch, args));
  REQUIRE_SUCCESS(stop->record(stream->handle()));
  REQUIRE_SUCCESS(stream->synchronize());
  auto ms = Event::elapsedMs(*start, *stop);
  REQUIRE(static_cast<bool>(ms));
  CHECK(*ms >= 0.0f);
  REQUIRE_SUCCESS(dout->copyToHost(out.data(), n * sizeof(float)));
  for (int i = 0; i < n; ++i)
    REQUIRE(out[i] == std::fma(3.0f, x[i], y[i]));

  // Dynamic shared memory beyond 48 KiB opts in automatically; beyond the device limit is refused.
  launch.dynamic_shared_bytes = 100 * 1024;
  REQUIRE_SUCCESS(kernel->launch(launch, args));
  REQUIRE_SUCCESS(stream->synchronize());
  launch.dynamic_shared_bytes = static_cast<unsigned>(info->max_shared_per_block_optin) + 1;
  llvm::Error tooMuch = kernel->launch(launch, args);
  REQUIRE(static_cast<bool>(tooMuch));
  CHECK_THAT(llvm::toString(std::move(tooMuch)), Catch::Contains("exceed"));

  // A cluster launch (sm_90+): 2 CTAs per cluster.
  if (info->cc_major >= 9) {
    launch.dynamic_shared_bytes = 0;
    launch.grid.x = 4;
    launch.cluster.x = 2;
    REQUIRE_SUCCESS(kernel->launch(launch, args));
    REQUIRE_SUCCESS(stream->synchronize());
  }

  auto missing = (*module)->kernel("no_such_kernel");
  REQUIRE(!missing);
  CHECK_THAT(llvm::toString(missing.takeError()), Catch::Contains("it has: saxpy"));
}

TEST_CASE("a cubin for another architecture is refused before the driver sees it", "[gpu][driver]") {
  CudaDriver &driver = driverOrFail();
  auto info = driver.device(0);
  REQUIRE(static_cast<bool>(info));
  const GpuArch other = info->cc_major == 10 ? GpuArch{9, 0, ArchSuffix::ArchSpecific}
                                             : GpuArch{10, 0, ArchSuffix::ArchSpecific};
  CompileResult compiled = compileFor(other.major == 10 ? kSm100aKernel : kSm90aKernel, other);
  auto module = KernelModule::load(driver, 0, compiled.cubin);
  REQUIRE(!module);
  const std::string message = llvm::toString(module.takeError());
  CHECK_THAT(message, Catch::StartsWith("kernel compiled for " + other.name() + " cannot run on " +
                                        info->name + " (" + info->smName() + ")"));
}
