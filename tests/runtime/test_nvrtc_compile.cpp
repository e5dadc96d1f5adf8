#include "kernels.h"

#include "fa4jit/runtime/compiler.h"
#include "fa4jit/runtime/cubin_info.h"
#include "fa4jit/runtime/nvrtc_library.h"

#include <catch2/catch.hpp>

#include <elf.h>
#include <cstring>

using namespace fa4jit::runtime;

namespace {

CompileRequest request(const char *source, const char *arch, const char *name = "probe.cu") {
  CompileRequest r;
  r.name = name;
  r.source = source;
  auto parsed = parseGpuArch(arch);
  REQUIRE(static_cast<bool>(parsed));
  r.options.arch = *parsed;
  return r;
}

CompileResult compileOk(const CompileRequest &r) {
  auto result = compile(r);
  if (!result)
    FAIL(llvm::toString(result.takeError()));
  return std::move(*result);
}

} // namespace

TEST_CASE("NVRTC opens lazily and reports its version and targets", "[runtime][nvrtc]") {
  auto nvrtc = NvrtcLibrary::get();
  REQUIRE(static_cast<bool>(nvrtc));
  CHECK(nvrtc->major() >= 12);
  CHECK(nvrtc->supportsSm(90));
  CHECK(nvrtc->supportsSm(100));
  CHECK_THAT(nvrtc->identity(), Catch::StartsWith("nvrtc " + std::to_string(nvrtc->major()) + "."));
  CHECK(nvrtc->buildId().size() >= 16); // GNU build-id, hex
  CHECK_THAT(nvrtc->path(), Catch::Contains("libnvrtc"));
}

TEST_CASE("an absent NVRTC is a clear error", "[runtime][nvrtc]") {
  NvrtcSearch search;
  search.candidates = {"/nonexistent/libnvrtc.so.13", "libnvrtc-does-not-exist.so"};
  auto lib = NvrtcLibrary::load(search);
  REQUIRE(!lib);
  std::string message = llvm::toString(lib.takeError());
  CHECK_THAT(message, Catch::Contains("NVRTC"));
  CHECK_THAT(message, Catch::Contains("not available"));
  CHECK_THAT(message, Catch::Contains("/nonexistent/libnvrtc.so.13"));
}

TEST_CASE("options are normalized: sorted, deduplicated, defaults explicit", "[runtime][nvrtc]") {
  CompileOptions a;
  a.defines = {"B=2", "A", "B=2"};
  a.extra = {"--extra-device-vectorization"};
  CompileOptions b = a;
  b.defines = {"A", "B=2"};
  auto fa = normalizedOptions(a), fb = normalizedOptions(b);
  REQUIRE(static_cast<bool>(fa));
  REQUIRE(static_cast<bool>(fb));
  CHECK(*fa == *fb);
  CHECK(std::is_sorted(fa->begin(), fa->end()));
  const std::vector<std::string> expected = {"--extra-device-vectorization", "--fmad=false",
                                             "--gpu-architecture=sm_90a", "--ptxas-options=--verbose",
                                             "-DA", "-DB=2", "-lineinfo", "-std=c++17"};
  CHECK(*fa == expected);

  CompileOptions fast;
  fast.fast_math = true;
  fast.fmad = true;
  fast.line_info = false;
  fast.max_registers = 128;
  auto ff = normalizedOptions(fast);
  REQUIRE(static_cast<bool>(ff));
  CHECK(std::count(ff->begin(), ff->end(), "--use_fast_math") == 1);
  CHECK(std::count(ff->begin(), ff->end(), "--fmad=true") == 1);
  CHECK(std::count(ff->begin(), ff->end(), "--maxrregcount=128") == 1);
  CHECK(std::count(ff->begin(), ff->end(), "-lineinfo") == 0);

  for (const char *owned : {"-arch=sm_80", "--gpu-architecture=sm_80", "--use_fast_math", "-pch",
                            "--pch-dir=/tmp", "--fmad=true", "-std=c++20"}) {
    CompileOptions bad;
    bad.extra = {owned};
    auto r = normalizedOptions(bad);
    REQUIRE(!r);
    CHECK_THAT(llvm::toString(r.takeError()), Catch::Contains(owned));
  }
}

TEST_CASE("sm_90a kernels with wgmma and setmaxnreg compile to an sm_90a cubin", "[runtime][nvrtc]") {
  CompileResult r = compileOk(request(kSm90aKernel, "sm_90a"));
  REQUIRE(r.cubin.size() > sizeof(Elf64_Ehdr));
  CHECK(std::memcmp(r.cubin.data(), ELFMAG, SELFMAG) == 0);
  CHECK(r.info.arch.name() == "sm_90a");
  CHECK(r.info.suffix_known);
  const CubinKernelInfo *k = r.info.find("warpgroup_probe");
  REQUIRE(static_cast<bool>(k));
  CHECK(k->registers > 0);
  CHECK(k->max_threads == 384);
  CHECK(k->param_bytes == 8);
  CHECK(k->spill_store_bytes == 0);
  CHECK(r.seconds > 0.0);
  CHECK(std::count(r.options.begin(), r.options.end(), "--gpu-architecture=sm_90a") == 1);
  // NVRTC's own hidden cache is off unless asked for (compile times must be real).
  CHECK(std::count(r.options.begin(), r.options.end(), "--no-cache") == 1);

  // The same source is refused for plain sm_90, with ptxas's reason in the error.
  auto plain = compile(request(kSm90aKernel, "sm_90"));
  REQUIRE(!plain);
  CHECK_THAT(llvm::toString(plain.takeError()), Catch::Contains("not supported on .target 'sm_90'"));
}

TEST_CASE("sm_100a kernels with tcgen05.alloc compile to an sm_100a cubin", "[runtime][nvrtc]") {
  CompileResult r = compileOk(request(kSm100aKernel, "sm_100a"));
  CHECK(r.info.arch.major == 10);
  CHECK(r.info.arch.minor == 0);
  CHECK(r.info.arch.suffix == ArchSuffix::ArchSpecific);
  const CubinKernelInfo *k = r.info.find("tmem_probe");
  REQUIRE(static_cast<bool>(k));
  CHECK(k->static_shared_bytes == 4);
  // The checker refuses it for an H200 before any driver is involved.
  llvm::Error refused = checkArchCompatible(r.info.arch, {9, 0, "NVIDIA H200"});
  REQUIRE(static_cast<bool>(refused));
  CHECK_THAT(llvm::toString(std::move(refused)),
             Catch::StartsWith("kernel compiled for sm_100a cannot run on NVIDIA H200 (sm_90)"));
}

TEST_CASE("the cubin reader reports registers, shared memory and spills", "[runtime][nvrtc]") {
  // 300 floats of static shared memory; a local array indexed at run time lives in local memory.
  const char *source = R"(
extern "C" __global__ void resources(float *out, int k) {
  __shared__ float s[300];
  float local[64];
  for (int i = 0; i < 64; ++i) local[i] = out[i];
  for (int i = 0; i < 64; ++i) local[(i * k) & 63] += out[i + 64];
  s[threadIdx.x % 300] = local[threadIdx.x % 64];
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % 300];
}
)";
  for (const char *arch : {"sm_80", "sm_89", "sm_90a", "sm_100a"}) {
    CAPTURE(arch);
    CompileResult r = compileOk(request(source, arch));
    CHECK(r.info.arch.name() == arch);
    const CubinKernelInfo *k = r.info.find("resources");
    REQUIRE(static_cast<bool>(k));
    CHECK(k->static_shared_bytes == 1200);
    CHECK(k->stack_frame_bytes >= 256);
    CHECK(k->registers > 0);
    CHECK(k->spill_store_bytes >= 0);
  }
  // Spills: ptxas's log is the only source; a capped register budget forces them.
  CompileRequest capped = request(R"(
extern "C" __global__ void pressure(float *o) {
  volatile float a[64];
  for (int i = 0; i < 64; i++) a[i] = o[i * threadIdx.x];
  o[0] = a[threadIdx.x % 64];
})", "sm_90a");
  capped.options.max_registers = 32;
  CompileResult spilled = compileOk(capped);
  const CubinKernelInfo *p = spilled.info.find("pressure");
  REQUIRE(p);
  CHECK(p->registers <= 32);
  CHECK(p->spill_store_bytes > 0);
  CHECK(p->spill_load_bytes > 0);
  CHECK(p->stack_frame_bytes > 0);

  CHECK(!readCubinInfo(llvm::ArrayRef<uint8_t>()));
  std::vector<uint8_t> junk(64, 0x7f);
  auto bad = readCubinInfo(junk);
  REQUIRE(!bad);
  CHECK_THAT(llvm::toString(bad.takeError()), Catch::Contains("malformed cubin"));
}

TEST_CASE("a truncated cubin is rejected without reading out of bounds", "[runtime][nvrtc]") {
  CompileResult r = compileOk(request(kSaxpyKernel, "sm_90a"));
  for (size_t cut : {size_t(63), size_t(200), r.cubin.size() / 2}) {
    std::vector<uint8_t> truncated(r.cubin.begin(), r.cubin.begin() + static_cast<long>(cut));
    auto info = readCubinInfo(truncated);
    CAPTURE(cut, r.cubin.size());
    CHECK(!info);
    if (!info)
      llvm::consumeError(info.takeError());
  }
  // Every other length: an error or a result, never a read past the end (ASan watches).
  for (size_t cut = 0; cut < r.cubin.size(); cut += 7) {
    std::vector<uint8_t> truncated(r.cubin.begin(), r.cubin.begin() + static_cast<long>(cut));
    auto info = readCubinInfo(truncated);
    if (!info)
      llvm::consumeError(info.takeError());
  }
}

TEST_CASE("embedded template headers are available to generated sources", "[runtime][nvrtc]") {
  CompileResult r = compileOk(request(kSaxpyKernel, "sm_90a", "saxpy.cu"));
  const CubinKernelInfo *k = r.info.find("saxpy");
  REQUIRE(static_cast<bool>(k));
  CHECK(k->static_shared_bytes == 1024);

  CompileRequest shadow = request(kSaxpyKernel, "sm_90a");
  shadow.headers.push_back({"fa4jit/common.cuh", "#error shadowed\n"});
  auto refused = compile(shadow);
  REQUIRE(!refused);
  CHECK_THAT(llvm::toString(refused.takeError()), Catch::Contains("shadow"));

  CompileRequest extra = request("#include \"local/helper.cuh\"\nextern \"C\" __global__ void k(int *o) { *o = kValue; }\n",
                                 "sm_89");
  extra.headers.push_back({"local/helper.cuh", "constexpr int kValue = 42;\n"});
  CHECK(compileOk(extra).info.find("k"));
}

TEST_CASE("compileMany compiles in parallel and keeps request order", "[runtime][nvrtc]") {
  std::vector<CompileRequest> requests = {
      request(kSm90aKernel, "sm_90a", "a.cu"), request(kSm100aKernel, "sm_100a", "b.cu"),
      request(kSaxpyKernel, "sm_80", "c.cu"), request("this is not C++", "sm_90a", "broken.cu"),
      request(kSaxpyKernel, "sm_100a", "d.cu")};
  auto results = compileMany(requests, CompilerConfig{}, 2);
  REQUIRE(results.size() == requests.size());
  const char *kernels[] = {"warpgroup_probe", "tmem_probe", "saxpy", nullptr, "saxpy"};
  const char *archs[] = {"sm_90a", "sm_100a", "sm_80", nullptr, "sm_100a"};
  for (size_t i = 0; i < results.size(); ++i) {
    CAPTURE(i);
    if (!kernels[i]) {
      REQUIRE(!results[i]);
      CHECK_THAT(llvm::toString(results[i].takeError()), Catch::Contains("broken.cu"));
      continue;
    }
    REQUIRE(static_cast<bool>(results[i]));
    CHECK(results[i]->info.arch.name() == archs[i]);
    CHECK(results[i]->info.find(kernels[i]));
  }
}

TEST_CASE("ptxas's wgmma serialization notice is attributed to its kernel", "[runtime][nvrtc]") {
  CubinInfo info;
  info.kernels.resize(2);
  info.kernels[0].name = "fast";
  info.kernels[1].name = "slow";
  const char *log =
      "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
      "wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage in the "
      "function 'slow'\n"
      "ptxas info    : Function properties for fast\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
  addPtxasSpillCounts(log, info);
  CHECK(info.kernels[0].wgmma_serialized == 0);
  CHECK(info.kernels[1].wgmma_serialized == 1);
  CHECK(info.kernels[0].spill_store_bytes == 0);
  addPtxasSpillCounts("ptxas info    : Function properties for fast\n", info);
  CHECK(info.kernels[1].wgmma_serialized == 0); // a clean log clears it
}
