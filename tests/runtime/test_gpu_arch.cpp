#include "fa4jit/runtime/gpu_arch.h"

#include <catch2/catch.hpp>

using namespace fa4jit::runtime;

TEST_CASE("GPU architectures parse and print as NVRTC spells them", "[runtime][arch]") {
  for (const char *name : {"sm_80", "sm_89", "sm_90a", "sm_100a", "sm_100f", "sm_120"}) {
    auto arch = parseGpuArch(name);
    REQUIRE(static_cast<bool>(arch));
    CHECK(arch->name() == name);
  }
  auto a = parseGpuArch("sm_100a");
  REQUIRE(static_cast<bool>(a));
  CHECK(a->major == 10);
  CHECK(a->minor == 0);
  CHECK(a->suffix == ArchSuffix::ArchSpecific);

  auto virt = parseGpuArch("compute_90a");
  REQUIRE(!virt);
  CHECK_THAT(llvm::toString(virt.takeError()), Catch::Contains("SASS"));
  for (const char *bad : {"", "sm_", "sm_9", "sm_90x", "90a", "sm_9000"}) {
    auto r = parseGpuArch(bad);
    CHECK(!r);
    llvm::consumeError(r.takeError());
  }
}

TEST_CASE("codegen targets map to their architectures", "[runtime][arch]") {
  CHECK(archForTarget(fa4jit::Target::Sm90a).name() == "sm_90a");
  CHECK(archForTarget(fa4jit::Target::Sm100a).name() == "sm_100a");
  CHECK(archForTarget(fa4jit::Target::Sm89).name() == "sm_89");
  CHECK(archForTarget(fa4jit::Target::Sm80).name() == "sm_80");
}

TEST_CASE("the arch checker refuses cubins a device cannot run", "[runtime][arch]") {
  const DeviceArch h200{9, 0, "NVIDIA H200"};
  const DeviceArch b200{10, 0, "NVIDIA B200"};
  const DeviceArch l40{8, 9, "NVIDIA L40S"};

  llvm::Error wrong = checkArchCompatible({10, 0, ArchSuffix::ArchSpecific}, h200);
  REQUIRE(static_cast<bool>(wrong));
  CHECK_THAT(llvm::toString(std::move(wrong)),
             Catch::StartsWith("kernel compiled for sm_100a cannot run on NVIDIA H200 (sm_90)"));

  CHECK(!checkArchCompatible({9, 0, ArchSuffix::ArchSpecific}, h200));
  // 'a' cubins run only on their exact compute capability.
  llvm::Error aOnOther = checkArchCompatible({9, 0, ArchSuffix::ArchSpecific}, b200);
  CHECK(static_cast<bool>(aOnOther));
  llvm::consumeError(std::move(aOnOther));
  // Plain SASS runs on the same major with an equal or newer minor, never across majors.
  CHECK(!checkArchCompatible({8, 0, ArchSuffix::None}, l40));
  llvm::Error newerMinor = checkArchCompatible({8, 9, ArchSuffix::None}, {8, 6, "RTX A6000"});
  CHECK(static_cast<bool>(newerMinor));
  llvm::consumeError(std::move(newerMinor));
  llvm::Error acrossMajors = checkArchCompatible({8, 0, ArchSuffix::None}, h200);
  CHECK(static_cast<bool>(acrossMajors));
  llvm::consumeError(std::move(acrossMajors));
  CHECK(!checkArchCompatible({10, 0, ArchSuffix::Family}, {10, 3, "NVIDIA B300"}));
}
