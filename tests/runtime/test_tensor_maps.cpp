// The TMA tensor-map geometry of the bf16 TensorMap kernel (no GPU needed): what the runtime hands
// cuTensorMapEncodeTiled for [B][H][S][D] tensors, and an error naming the operand and the problem
// for every layout TMA cannot describe.
// Private to the runtime; the geometry (and, on the GPU, the encoding) is tested here.
#include "../../runtime/src/toolchain/driver_api.h"
#include "../../runtime/src/toolchain/tensor_maps.h"

#include "fa4jit/runtime/device_objects.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>

using namespace fa4jit;
using runtime::encodeAttentionTensorMaps;
using runtime::tensorMapGeometry;

namespace {

constexpr std::uint64_t kBase = 0x7f0000000000ull; // 16-byte aligned fake device address

// The error tensorMapGeometry gives, or "" when it accepts the tensor.
std::string errorOf(const TensorDesc &t, int box_rows, const char *operand) {
  auto g = tensorMapGeometry(t, box_rows, operand);
  return g ? std::string() : llvm::toString(g.takeError());
}

TensorDesc valid() { return TensorDesc::contiguous(kBase, DType::BF16, 2, 4, 300, 128); }

} // namespace

TEST_CASE("contiguous [B,H,S,D] tensors map to dims {D,S,H,B}", "[runtime][tensor_maps]") {
  const std::int64_t D = GENERATE(64, 128, 256);
  const std::int64_t B = 2, H = 3, S = 100;
  const int rows = GENERATE(128, 176);
  auto g = tensorMapGeometry(TensorDesc::contiguous(kBase, DType::BF16, B, H, S, D), rows, "q");
  REQUIRE_OK(g);
  CHECK(g->dims == std::array<std::uint64_t, 4>{std::uint64_t(D), 100, 3, 2});
  CHECK(g->byte_strides == std::array<std::uint64_t, 3>{std::uint64_t(D * 2), std::uint64_t(S * D * 2),
                                                        std::uint64_t(H * S * D * 2)});
  CHECK(g->box == std::array<std::uint32_t, 4>{64, std::uint32_t(rows), 1, 1});
}

TEST_CASE("a BSHD-strided view keeps its strides", "[runtime][tensor_maps]") {
  const std::int64_t B = 2, H = 4, S = 50, D = 128;
  const TensorDesc bshd{kBase, DType::BF16, {B, H, S, D}, {S * H * D, D, H * D, 1}};
  auto g = tensorMapGeometry(bshd, 64, "k");
  REQUIRE_OK(g);
  CHECK(g->dims == std::array<std::uint64_t, 4>{128, 50, 4, 2});
  CHECK(g->byte_strides == std::array<std::uint64_t, 3>{H * D * 2, D * 2, S * H * D * 2});
  CHECK(g->box == std::array<std::uint32_t, 4>{64, 64, 1, 1});
}

TEST_CASE("the limits themselves are accepted", "[runtime][tensor_maps]") {
  CHECK(errorOf(valid(), 1, "q").empty());
  CHECK(errorOf(valid(), 256, "q").empty());
  TensorDesc largest_stride = valid();
  largest_stride.stride[0] = (std::int64_t(1) << 39) - 8; // 2^40 - 16 bytes
  CHECK(errorOf(largest_stride, 128, "q").empty());
  // seqlen 2^32 - 1 of one 64-wide head: strides (2^32 - 1) * 128 bytes, below 2^40.
  CHECK(errorOf(TensorDesc::contiguous(kBase, DType::BF16, 1, 1, (std::int64_t(1) << 32) - 1, 64), 128, "q").empty());
}

TEST_CASE("layouts TMA cannot describe are errors naming the operand", "[runtime][tensor_maps]") {
  SECTION("misaligned base address") {
    TensorDesc t = valid();
    t.data += 8;
    const std::string e = errorOf(t, 128, "k");
    CHECK_THAT(e, Catch::Contains("k tensor map"));
    CHECK_THAT(e, Catch::Contains("base address 0x7f0000000008 is not 16-byte aligned"));
  }
  SECTION("row stride not a multiple of 16 bytes") {
    TensorDesc t = valid();
    t.stride[2] = 132; // 264 bytes
    const std::string e = errorOf(t, 128, "v");
    CHECK_THAT(e, Catch::Contains("v tensor map"));
    CHECK_THAT(e, Catch::Contains("seqlen stride 132 elements (264 bytes) is not a multiple of 16 bytes"));
  }
  SECTION("head stride not a multiple of 16 bytes") {
    TensorDesc t = valid();
    t.stride[1] += 4;
    const std::string e = errorOf(t, 128, "q");
    CHECK_THAT(e, Catch::Contains("q tensor map"));
    CHECK_THAT(e, Catch::Contains("heads stride") && Catch::Contains("not a multiple of 16 bytes"));
  }
  SECTION("batch stride of 2^40 bytes") {
    TensorDesc t = valid();
    t.stride[0] = std::int64_t(1) << 39;
    const std::string e = errorOf(t, 128, "k");
    CHECK_THAT(e, Catch::Contains("k tensor map"));
    CHECK_THAT(e, Catch::Contains("batch stride") && Catch::Contains("not below TMA's 2^40 bytes"));
  }
  SECTION("negative stride") {
    TensorDesc t = valid();
    t.stride[1] = -t.stride[1];
    const std::string e = errorOf(t, 128, "v");
    CHECK_THAT(e, Catch::Contains("v tensor map"));
    CHECK_THAT(e, Catch::Contains("heads stride -38400 is negative"));
  }
  SECTION("innermost stride other than 1") {
    TensorDesc t = valid();
    t.stride[3] = 2;
    const std::string e = errorOf(t, 128, "q");
    CHECK_THAT(e, Catch::Contains("q tensor map"));
    CHECK_THAT(e, Catch::Contains("head_dim stride is 2"));
  }
  SECTION("head dim not a multiple of 64") {
    const std::string e = errorOf(TensorDesc::contiguous(kBase, DType::BF16, 2, 4, 300, 96), 128, "k");
    CHECK_THAT(e, Catch::Contains("k tensor map"));
    CHECK_THAT(e, Catch::Contains("head_dim 96 is not a multiple of 64"));
  }
  SECTION("box rows outside [1, 256]") {
    const int rows = GENERATE(0, -1, 257);
    const std::string e = errorOf(valid(), rows, "v");
    CHECK_THAT(e, Catch::Contains("v tensor map"));
    CHECK_THAT(e, Catch::Contains("box of " + std::to_string(rows) + " rows is outside TMA's [1, 256]"));
  }
  SECTION("a dim of zero") {
    static const char *const names[4] = {"batch", "heads", "seqlen", "head_dim"};
    const int dim = GENERATE(0, 1, 2, 3);
    TensorDesc t = valid();
    t.shape[dim] = 0;
    const std::string e = errorOf(t, 128, "q");
    CHECK_THAT(e, Catch::Contains("q tensor map"));
    CHECK_THAT(e, Catch::Contains(std::string(names[dim]) + " is 0"));
  }
  SECTION("a dim of 2^32") {
    const TensorDesc t = TensorDesc::contiguous(kBase, DType::BF16, 1, 1, std::int64_t(1) << 32, 64);
    const std::string e = errorOf(t, 128, "k");
    CHECK_THAT(e, Catch::Contains("k tensor map"));
    CHECK_THAT(e, Catch::Contains("seqlen is 4294967296"));
  }
  SECTION("not BF16") {
    TensorDesc t = valid();
    t.dtype = DType::F32;
    const std::string e = errorOf(t, 128, "v");
    CHECK_THAT(e, Catch::Contains("v tensor map"));
    CHECK_THAT(e, Catch::Contains("dtype is f32"));
  }
}

TEST_CASE("encoding checks the geometry before calling the driver", "[runtime][tensor_maps]") {
  TensorDesc q = valid();
  q.data += 2;
  const runtime::DriverApi no_driver; // every entry null: a driver call would crash the test
  auto maps = encodeAttentionTensorMaps(no_driver, q, valid(), valid(), 128, 128);
  REQUIRE_ERR(maps);
  CHECK_THAT(llvm::toString(maps.takeError()), Catch::Contains("q tensor map: base address"));
}

namespace {

bool allZero(const device::attention_sm90::TensorMap &m) {
  for (std::uint64_t word : m.opaque)
    if (word != 0)
      return false;
  return true;
}

} // namespace

TEST_CASE("the driver encodes the three maps of contiguous and BSHD tensors", "[gpu][tensor_maps]") {
  auto driver = runtime::CudaDriver::get();
  REQUIRE_OK(driver);
  REQUIRE_SUCCESS(driver->makeCurrent(0));
  const std::int64_t B = 2, H = 4, S = 300, D = GENERATE(64, 128, 256);
  const int block_n = GENERATE(64, 128, 176);
  auto buffer = runtime::DeviceBuffer::allocate(*driver, std::size_t(3 * B * H * S * D * 2));
  REQUIRE_OK(buffer);
  const std::uint64_t bytes = std::uint64_t(B * H * S * D * 2);
  const TensorDesc q = TensorDesc::contiguous(buffer->address(), DType::BF16, B, H, S, D);
  const TensorDesc k{buffer->address() + bytes, DType::BF16, {B, H, S, D}, {S * H * D, D, H * D, 1}}; // BSHD
  const TensorDesc v = TensorDesc::contiguous(buffer->address() + 2 * bytes, DType::BF16, B, H, S, D);
  auto maps = encodeAttentionTensorMaps(driver->api(), q, k, v, 128, block_n);
  REQUIRE_OK(maps);
  CHECK_FALSE(allZero(maps->q));
  CHECK_FALSE(allZero(maps->k));
  CHECK_FALSE(allZero(maps->v));
}
