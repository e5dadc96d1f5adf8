// CI's compile of every generated kernel: each enumerateVariants() entry for sm_90a and sm_100a
// must emit, compile with NVRTC to a cubin of its architecture, and spill nothing. Registers,
// shared memory and (sm_100a attention) TMEM columns are reported per variant.
#include "cuobjdump.h"
#include "variant_cubins.h"

#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/runtime/gpu_arch.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>

using namespace fa4jit;
using fa4jit::testing::variantCubins;

TEST_CASE("every sm_80, sm_89, sm_90a and sm_100a variant compiles to a cubin without spills", "[runtime][nvrtc][variants]") {
  const auto &all = variantCubins();
  REQUIRE(!all.empty());
  int sm100_attention = 0, tcgen05 = 0;
  for (const auto &v : all) {
    INFO(kernelName(v.spec) << " (" << toString(v.spec.target) << ")");
    if (!v.error.empty())
      FAIL(v.error);
    const runtime::CubinInfo &info = v.result.info;
    CHECK(info.arch.name() == runtime::archForTarget(v.spec.target).name());
    for (const EntryPoint &e : v.emitted.entries) {
      const runtime::CubinKernelInfo *k = info.find(e.name);
      REQUIRE(k != nullptr);
      CHECK(k->spill_store_bytes == 0);
      CHECK(k->spill_load_bytes == 0);
      CHECK(k->stack_frame_bytes == 0);
      CHECK(k->wgmma_serialized == 0); // ptxas did not have to serialize the warpgroup MMAs
      CHECK(k->registers > 0);
      const bool tc = isTcgen05Attention(v.spec);
      std::printf("%-8s %-46s regs %3d  smem %6d dyn + %5d static  stack %d%s\n", toString(v.spec.target),
                  e.name.c_str(), k->registers, e.dynamic_shared_bytes, k->static_shared_bytes,
                  k->stack_frame_bytes,
                  tc ? ("  tmem " + std::to_string(v.spec.attention.tmem.columns_allocated) + " cols").c_str() : "");
    }
    if (v.spec.target == Target::Sm100a && v.spec.family == KernelFamily::AttentionForward) {
      ++sm100_attention;
      tcgen05 += isTcgen05Attention(v.spec);
    }
  }
  // nvfp8 and directp x head dims 64/128/256 x causal, plus directp's other classifiers.
  CHECK(tcgen05 >= 12);
  CHECK(sm100_attention > tcgen05); // the bf16 route stays on mma.sync
}

TEST_CASE("an sm_100a attention cubin is refused on a device of another architecture", "[runtime][arch]") {
  const auto &all = variantCubins();
  const fa4jit::testing::VariantCubin *sm100 = nullptr;
  for (const auto &v : all)
    if (isTcgen05Attention(v.spec) && v.error.empty()) {
      sm100 = &v;
      break;
    }
  REQUIRE(sm100 != nullptr);
  const runtime::GpuArch arch = sm100->result.info.arch;
  CHECK(arch.name() == "sm_100a");
  llvm::Error refused = runtime::checkArchCompatible(arch, runtime::DeviceArch{9, 0, "NVIDIA H200"});
  REQUIRE(static_cast<bool>(refused));
  CHECK_THAT(llvm::toString(std::move(refused)), Catch::StartsWith("kernel compiled for sm_100a cannot run on NVIDIA H200 (sm_90)"));
  // Blackwell parts other than sm_100 (e.g. sm_103, sm_120) cannot run an arch-specific sm_100a cubin either.
  llvm::Error other = runtime::checkArchCompatible(arch, runtime::DeviceArch{12, 0, "RTX"});
  CHECK(static_cast<bool>(other));
  llvm::consumeError(std::move(other));
  CHECK_FALSE(static_cast<bool>(runtime::checkArchCompatible(arch, runtime::DeviceArch{10, 0, "NVIDIA B200"})));
}

namespace {

// Occurrences of SASS opcodes (the token after the address comment) matching `pred`.
template <class Pred> std::map<std::string, int> countOpcodes(const std::string &sass, Pred pred) {
  std::map<std::string, int> counts;
  std::istringstream in(sass);
  std::string line;
  while (std::getline(in, line)) {
    const size_t end = line.find("*/");
    if (line.find("/*") == std::string::npos || end == std::string::npos)
      continue;
    std::istringstream rest(line.substr(end + 2));
    std::string op;
    rest >> op;
    if (!op.empty() && op[0] == '@') // predicate guard: the opcode follows
      rest >> op;
    const std::string base = op.substr(0, op.find('.'));
    if (!base.empty() && pred(base))
      ++counts[base];
  }
  return counts;
}

int total(const std::map<std::string, int> &m) {
  int n = 0;
  for (const auto &kv : m)
    n += kv.second;
  return n;
}

std::string describe(const std::map<std::string, int> &m) {
  std::string s;
  for (const auto &kv : m)
    s += (s.empty() ? "" : " ") + kv.first + " x" + std::to_string(kv.second);
  return s.empty() ? "none" : s;
}

// The SASS of one variant's cubin; nullopt (with a WARN) where no cuobjdump is installed, a
// failure where it cannot disassemble.
std::optional<std::string> sassOf(const fa4jit::testing::VariantCubin &v) {
  static const std::optional<std::string> cuobjdump = fa4jit::testing::findCuobjdump();
  if (!cuobjdump)
    return std::nullopt;
  const std::optional<std::string> sass = fa4jit::testing::disassemble(*cuobjdump, v.result.cubin);
  // cuobjdump 13.5 and later disassemble through nvdisasm beside them (scripts/install-deps.sh).
  if (!sass)
    FAIL("cuobjdump " << *cuobjdump << " could not disassemble the cubin (is nvdisasm beside it?)");
  return sass;
}

bool haveCuobjdump() {
  if (fa4jit::testing::findCuobjdump())
    return true;
  WARN("SKIPPED: cuobjdump not found (PATH, /usr/local/cuda/bin, Python package nvidia-cuda-cuobjdump); "
       "run scripts/install-deps.sh to get it");
  return false;
}

} // namespace

TEST_CASE("SASS of every attention variant: the route's tensor-core instructions, no local memory",
          "[runtime][sass][variants]") {
  if (!haveCuobjdump())
    return;
  int checked = 0;
  for (const auto &v : variantCubins()) {
    if (v.spec.family != KernelFamily::AttentionForward || !v.error.empty())
      continue;
    INFO(kernelName(v.spec) << " (" << toString(v.spec.target) << ")");
    const std::optional<std::string> sass = sassOf(v);
    const auto local = countOpcodes(*sass, [](const std::string &op) { return op == "LDL" || op == "STL"; });
    CHECK(total(local) == 0);
    const auto mma = countOpcodes(*sass, [](const std::string &op) {
      return op.size() > 3 && op.compare(op.size() - 3, 3, "MMA") == 0;
    });
    if (isTcgen05Attention(v.spec)) {
      // Block-scaled tcgen05 MMAs are UTC*MMA: UTCOMMA for the FP4 kinds (mxf4nvf4, mxf4), UTCQMMA
      // for kind::f8f6f4. QK^T takes head_dim / 64 instructions, PV block_n / 64 (FP4) or / 32 (FP8).
      const AttentionSpec &a = v.spec.attention;
      const int qk = a.head_dim / 64;
      const int pv = a.route == Route::DirectP ? a.tile.shape.block_n / 64 : a.tile.shape.block_n / 32;
      const int fp4 = mma.count("UTCOMMA") ? mma.at("UTCOMMA") : 0;
      const int fp8 = mma.count("UTCQMMA") ? mma.at("UTCQMMA") : 0;
      CHECK(fp4 >= (a.route == Route::DirectP ? qk + pv : qk));
      if (a.route == Route::Nvfp8)
        CHECK(fp8 >= pv);
      const auto tmem = countOpcodes(*sass, [](const std::string &op) { return op.rfind("UTC", 0) == 0; });
      CHECK(tmem.count("UTCCP")); // scale factors copied shared -> TMEM
      std::printf("sass %-46s %s | %s\n", kernelName(v.spec).c_str(), describe(mma).c_str(), describe(tmem).c_str());
    } else {
      // mma.sync lowers to HMMA on sm_80 and sm_90 (FP8 m16n8k32 included there), to QMMA (native
      // FP8) or HMMA on sm_89; wgmma to QGMMA / HGMMA.
      CHECK(total(mma) > 0);
      if (v.emitted.source.find("attention_sm90/kernel.cuh") != std::string::npos)
        CHECK(mma.count(v.spec.attention.route == Route::Bf16 ? "HGMMA" : "QGMMA")); // BF16 / FP8 wgmma
      else if (v.spec.target == Target::Sm89)
        CHECK((mma.count("HMMA") + mma.count("QMMA")) > 0);
      else
        CHECK(mma.count("HMMA"));
      if (v.spec.attention.tile.staging.kv == KvStaging::TensorMap) {
        // Tiles by TMA tensor maps (4-D boxes), V read N-major by the PV wgmma, and no pass beside it.
        const auto tma = countOpcodes(*sass, [](const std::string &op) { return op == "UTMALDG"; });
        CHECK(total(tma) > 0);
        if (v.spec.attention.tile.bench_ablation != StageAblation::SkipPv)
          CHECK(sass->find("tnspB") != std::string::npos);
        CHECK(v.emitted.entries.size() == 1);
      }
      std::printf("sass %-8s %-46s %s\n", toString(v.spec.target), kernelName(v.spec).c_str(), describe(mma).c_str());
    }
    ++checked;
  }
  CHECK(checked > 0);
}

TEST_CASE("SASS of every backward variant: mma.sync or wgmma, FP32 reductions, no local memory",
          "[runtime][sass][variants][backward]") {
  if (!haveCuobjdump())
    return;
  int checked = 0, warpgroup = 0;
  for (const auto &v : variantCubins()) {
    if (v.spec.family != KernelFamily::AttentionBackward)
      continue;
    INFO(kernelName(v.spec));
    REQUIRE(v.error.empty());
    const std::optional<std::string> sass = sassOf(v);
    const auto local = countOpcodes(*sass, [](const std::string &op) { return op == "LDL" || op == "STL"; });
    CHECK(total(local) == 0);
    // Five products per query block: S, dP, dV (E4M3) and dK, dQ (BF16). mma.sync: HMMA (m16n8k32
    // and m16n8k16 on sm_90), K and dS^T transposed by ldmatrix. wgmma: QGMMA (FP8: S, dP, dV) and
    // HGMMA (BF16: dK, dQ^T), and no HMMA left.
    const auto hmma = countOpcodes(*sass, [](const std::string &op) { return op == "HMMA"; });
    const auto hgmma = countOpcodes(*sass, [](const std::string &op) { return op == "QGMMA" || op == "HGMMA"; });
    if (v.spec.backward.mma == BackwardMma::Wgmma) {
      CHECK(hgmma.count("QGMMA"));
      CHECK(hgmma.count("HGMMA"));
      CHECK(total(hmma) == 0);
      ++warpgroup;
    } else {
      CHECK(total(hmma) >= 5);
      const auto ldsm = countOpcodes(*sass, [](const std::string &op) { return op == "LDSM"; });
      CHECK(total(ldsm) > 0);
    }
    // dQ reaches its FP32 accumulator by global reductions: per element, or per row from shared
    // memory (UBLKRED, the wgmma pass's 64-query steps).
    const auto red = countOpcodes(
        *sass, [](const std::string &op) { return op == "RED" || op == "REDG" || op == "UBLKRED"; });
    const bool bulk = v.spec.backward.mma == BackwardMma::Wgmma && v.spec.backward.tile.block_m == 64;
    CHECK(red.count(bulk ? "UBLKRED" : "REDG") + red.count(bulk ? "UBLKRED" : "RED") > 0);
    std::printf("sass %-46s %s %s | %s\n", kernelName(v.spec).c_str(), describe(hmma).c_str(),
                describe(hgmma).c_str(), describe(red).c_str());
    ++checked;
  }
  CHECK(checked == 36);
  CHECK(warpgroup == 17);
}

TEST_CASE("SASS of every merge variant: one entry, global loads and stores, no local memory",
          "[runtime][sass][variants][merge]") {
  if (!haveCuobjdump())
    return;
  int checked = 0;
  for (const auto &v : variantCubins()) {
    if (v.spec.family != KernelFamily::MergeStates)
      continue;
    INFO(kernelName(v.spec) << " (" << toString(v.spec.target) << ")");
    REQUIRE(v.error.empty());
    CHECK(v.emitted.entries.size() == 1);
    const std::optional<std::string> sass = sassOf(v);
    // The weights' arrays (one entry per possible part) stay in registers: the loop over parts is
    // unrolled on the device.
    const auto local = countOpcodes(*sass, [](const std::string &op) { return op == "LDL" || op == "STL"; });
    CHECK(total(local) == 0);
    const auto global = countOpcodes(*sass, [](const std::string &op) { return op == "LDG" || op == "STG"; });
    CHECK(global.count("LDG"));
    CHECK(global.count("STG"));
    ++checked;
  }
  CHECK(checked == 36); // 3 state types x 3 head dims x 4 targets
}

TEST_CASE("SASS of every paged-kv variant: decode on HMMA with no local memory, append and combine on loads",
          "[runtime][sass][variants][paged]") {
  if (!haveCuobjdump())
    return;
  int checked = 0;
  for (const auto &v : variantCubins()) {
    if (v.spec.family != KernelFamily::PagedKv)
      continue;
    INFO(kernelName(v.spec) << " (" << toString(v.spec.target) << ")");
    REQUIRE(v.error.empty());
    REQUIRE(v.emitted.entries.size() == 3);
    const std::optional<std::string> sass = sassOf(v);
    // The Q, O and step-operand arrays stay in registers (unrolled loops; the V n-tile's byte is
    // chosen by a switch, not by indexing).
    const auto local = countOpcodes(*sass, [](const std::string &op) { return op == "LDL" || op == "STL"; });
    CHECK(total(local) == 0);
    const auto mma = countOpcodes(*sass, [](const std::string &op) { return op.rfind("HMMA", 0) == 0; });
    CHECK(total(mma) > 0);
    const auto global = countOpcodes(*sass, [](const std::string &op) { return op == "LDG" || op == "STG"; });
    CHECK(global.count("LDG"));
    CHECK(global.count("STG"));
    ++checked;
  }
  // (head dim 64, 128) x 5 page sizes x (4, 8 warps) x (fp8, mxfp4 V) x (registers, ring of 2, 3)
  // x 4 targets
  CHECK(checked == 480);
}
