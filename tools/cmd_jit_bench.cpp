// `fa4jit jit-bench`: the JIT's own costs: cold NVRTC compile of one
// attention kernel, a disk-cache hit in a new process up to a launchable kernel, an in-process
// (memory) hit, and on a GPU the quantizers' bandwidth beside a device copy of the same run.
#include "cli_flags.h"
#include "subcommands.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/quantize/params.cuh"
#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/gpu_arch.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unistd.h>
#include <cstdio>

namespace fa4jit::tools {

namespace {

const char kUsage[] =
    "usage: fa4jit jit-bench [--target T] [--json]\n"
    "\n"
    "Measures, for the default directp D128 attention kernel: a cold compile (fresh cache\n"
    "directory), a disk-cache hit in a new process up to a launchable kernel (loaded into the GPU\n"
    "when there is one), and the in-process memory hit; on a GPU also the quantizers' bandwidth\n"
    "(input read + outputs written) against a device-to-device copy of the same size.\n";

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit jit-bench: %s\n", m.c_str());
  return 1;
}

// The child process: open everything, then time cache lookup (+ module load on a GPU).
int childHit(Target target) {
  const auto t0 = Clock::now();
  auto config = runtime::loadConfig();
  if (!config)
    return fail(llvm::toString(config.takeError()));
  KernelSpec spec = defaultAttentionSpec(Route::DirectP, 128, false, target);
  auto engine = Engine::create();
  const double setup = secondsSince(t0);
  if (engine && (*engine)->target() == target) {
    const auto t1 = Clock::now();
    auto compiled = (*engine)->jit().get(spec);
    if (!compiled)
      return fail(llvm::toString(compiled.takeError()));
    auto k = (*engine)->kernel(spec, (*compiled)->emitted.entries.at(0).name);
    if (!k)
      return fail(llvm::toString(k.takeError()));
    std::printf("{\"setup_s\":%.6f,\"hit_to_launchable_s\":%.6f,\"layer\":\"%s\",\"loaded\":true}\n", setup,
                secondsSince(t1), cache::layerName((*compiled)->layer));
    return (*compiled)->layer == cache::Layer::Produced ? 1 : 0;
  }
  if (engine)
    return fail("device target differs from --target");
  llvm::consumeError(engine.takeError());
  const auto t1 = Clock::now();
  auto jit = runtime::KernelJit::create(*config);
  if (!jit)
    return fail(llvm::toString(jit.takeError()));
  auto compiled = (*jit)->get(spec);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  std::printf("{\"setup_s\":%.6f,\"hit_to_launchable_s\":%.6f,\"layer\":\"%s\",\"loaded\":false}\n", setup,
              secondsSince(t1), cache::layerName((*compiled)->layer));
  return (*compiled)->layer == cache::Layer::Produced ? 1 : 0;
}

} // namespace

int runJitBench(int argc, char **argv) {
  CliFlags flags({"target", "phase"}, {"json", "help"});
  if (auto e = flags.parse(argc, argv))
    return std::fprintf(stderr, "fa4jit jit-bench: %s\n%s", llvm::toString(std::move(e)).c_str(), kUsage), 2;
  if (flags.has("help"))
    return std::fputs(kUsage, stdout), 0;
  auto engine = Engine::create();
  Target target = Target::Sm90a;
  if (engine) {
    target = (*engine)->target();
  } else {
    llvm::consumeError(engine.takeError());
    auto t = parseTarget(flags.str("target", "sm_90a"));
    if (!t)
      return fail(llvm::toString(t.takeError()));
    target = *t;
  }
  if (flags.str("phase", "") == "child")
    return childHit(target);

  // A fresh private cache directory, so the first compile is cold.
  llvm::SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("fa4jit-jit-bench", dir))
    return fail("cannot create a temporary cache directory: " + ec.message());
  auto config = runtime::loadConfig();
  if (!config)
    return fail(llvm::toString(config.takeError()));
  config->cache.user_dir = std::string(dir.str());
  config->cache.system_dir.clear();
  config->cache.disable_disk = false;
  auto jit = runtime::KernelJit::create(*config);
  if (!jit)
    return fail(llvm::toString(jit.takeError()));
  KernelSpec spec = defaultAttentionSpec(Route::DirectP, 128, false, target);
  auto t0 = Clock::now();
  auto cold = (*jit)->get(spec);
  if (!cold)
    return fail(llvm::toString(cold.takeError()));
  const double coldS = secondsSince(t0), nvrtcS = (*cold)->compile_seconds;

  // In-process hit: the memo in front of the cache.
  const int n = 2000;
  t0 = Clock::now();
  for (int i = 0; i < n; ++i)
    if (!(*jit)->get(spec))
      return fail("memory hit failed");
  const double memoryUs = secondsSince(t0) / n * 1e6;

  // New process, same cache directory.
  auto self = llvm::sys::fs::getMainExecutable("fa4jit", reinterpret_cast<void *>(&runJitBench));
  llvm::SmallString<128> out;
  llvm::sys::fs::createTemporaryFile("fa4jit-jit-bench", "json", out);
  const std::string envCache = "FA4JIT_CACHE_DIR=" + std::string(dir.str());
  std::vector<llvm::StringRef> childArgs = {self, "jit-bench", "--phase", "child", "--target", toString(target)};
  std::vector<std::string> envStore;
  for (char **e = environ; *e; ++e)
    if (llvm::StringRef(*e).startswith("FA4JIT_CACHE_DIR=") == false)
      envStore.push_back(*e);
  envStore.push_back(envCache);
  std::vector<llvm::StringRef> env(envStore.begin(), envStore.end());
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(out), llvm::None};
  t0 = Clock::now();
  const int rc = llvm::sys::ExecuteAndWait(self, childArgs, llvm::makeArrayRef(env), redirects);
  const double childWall = secondsSince(t0);
  auto childOut = llvm::MemoryBuffer::getFile(out);
  std::string childJson = childOut ? (*childOut)->getBuffer().trim().str() : "{}";
  llvm::sys::fs::remove(out);

  std::string quant = "null";
  if (engine) {
    Engine &eng = **engine;
    const int B = 16, H = 16, S = 8192, D = 128;
    const std::size_t elems = std::size_t(B) * H * S * D;
    auto x = runtime::DeviceBuffer::allocate(eng.driver(), elems * 2);
    auto y = runtime::DeviceBuffer::allocate(eng.driver(), elems * 2);
    if (!x || !y)
      return fail("allocation failed");
    std::vector<uint16_t> ones(elems);
    for (std::size_t i = 0; i < elems; ++i)
      ones[i] = uint16_t(0x3F80 + (i * 2654435761u % 97)); // bf16 values in [1, 2): varied, finite
    if (auto e = x->copyFromHost(ones.data(), elems * 2))
      return fail(llvm::toString(std::move(e)));
    auto timeMs = [&](auto &&fn) -> double {
      fn();
      auto a = runtime::Event::create(eng.driver()), b = runtime::Event::create(eng.driver());
      std::vector<float> v;
      for (int i = 0; i < 10; ++i) {
        llvm::consumeError(a->record());
        fn();
        llvm::consumeError(b->record());
        auto ms = runtime::Event::elapsedMs(*a, *b);
        v.push_back(ms ? *ms : 0);
      }
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double copyMs = timeMs([&] { llvm::consumeError(y->copyFrom(*x, elems * 2)); });
    const double copyTBs = 2.0 * elems * 2 / (copyMs * 1e-3) / 1e12;
    TensorDesc desc = TensorDesc::contiguous(x->address(), DType::BF16, B, H, S, D);
    std::string rows;
    for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead}) {
      // Output bytes: payload + scales (NVFP4/MXFP4 ~ 4.5 bits/elem, FP8 8 bits).
      const double outBytes = f == QuantFormat::Fp8PerHead ? elems : elems * 0.5 + elems / (f == QuantFormat::Nvfp4 ? 16 : 32);
      QuantizedTensor quantized; // (its buffers are reused by every timed call, as a forward reuses its workspace)
      const double ms = timeMs([&] { llvm::consumeError(eng.quantize(desc, f, quantized, "x")); });
      const double tbs = (elems * 2.0 + outBytes) / (ms * 1e-3) / 1e12;
      rows += fmt::format("{}{{\"format\":\"{}\",\"ms\":{:.4f},\"tb_s\":{:.3f},\"fraction_of_copy\":{:.3f}}}",
                          rows.empty() ? "" : ",", toString(f), ms, tbs, tbs / copyTBs);
    }
    // Each pass alone, per CTA size, at the 4k-key shape of `fa4jit bench` (D 128): where the
    // quantizers' time goes.
    std::string passes, calls;
    {
      namespace dq = device::quantize;
      const int pb = 8, ph = 16, ps = 4096;
      const double in_bytes = 2.0 * pb * ph * ps * D;
      TensorDesc px = TensorDesc::contiguous(x->address(), DType::BF16, pb, ph, ps, D);
      for (QuantFormat f : {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead}) {
        QuantizedTensor passOut;
        if (auto e = eng.quantize(px, f, passOut, "x"))
          return fail(llvm::toString(std::move(e)));
        { // the whole call, as the engine runs it (NVFP4: the fused pass)
          const double ms = timeMs([&] { llvm::consumeError(eng.quantize(px, f, passOut, "x")); });
          const double out_bytes = f == QuantFormat::Fp8PerHead ? in_bytes / 2 : in_bytes / 4 + in_bytes / 64;
          const double tbs = (in_bytes + out_bytes) / (ms * 1e-3) / 1e12;
          calls += fmt::format("{}{{\"format\":\"{}\",\"ms\":{:.4f},\"tb_s\":{:.3f},\"fraction_of_copy\":{:.3f}}}",
                               calls.empty() ? "" : ",", toString(f), ms, tbs, tbs / copyTBs);
        }
        for (int threads : {128, 256, 512}) {
          KernelSpec qs = defaultQuantizeSpec(f, D, eng.target());
          qs.quantize.threads = threads;
          auto compiled = eng.jit().get(qs);
          if (!compiled) { // (a CTA size the format's spec rules refuse)
            llvm::consumeError(compiled.takeError());
            continue;
          }
          const auto &entries = (*compiled)->emitted.entries;
          auto amax = eng.kernel(qs, entries.at(0).name);
          if (!amax)
            return fail(llvm::toString(amax.takeError()));
          auto encode = eng.kernel(qs, entries.at(1).name);
          if (!encode)
            return fail(llvm::toString(encode.takeError()));
          dq::QuantizeParams p{};
          p.x = px.data, p.payload = passOut.payload.address();
          p.scales = f == QuantFormat::Fp8PerHead ? 0 : passOut.scales.address();
          p.head_scalar = passOut.head_scalar.address(), p.amax_partial = passOut.amax_partial.address();
          p.nonfinite_rows = passOut.nonfinite_rows.address();
          p.x_batch_stride = px.stride[0], p.x_head_stride = px.stride[1], p.x_row_stride = px.stride[2];
          p.batch = pb, p.heads = ph, p.seqlen = ps, p.amax_chunks = dq::quantizeDefaultAmaxChunks(1, pb * ph, ps);
          void *args[] = {&p};
          runtime::LaunchConfig la, le;
          la.grid = {unsigned(p.amax_chunks), unsigned(pb * ph), 1};
          la.block = {unsigned(threads), 1, 1};
          const dq::Grid3 g = dq::quantizeEncodeGrid(int(f), D, threads, pb, ph, ps);
          le.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
          le.block = {unsigned(threads), 1, 1};
          const double amaxMs = timeMs([&] { llvm::consumeError(amax->launch(la, args)); });
          const double encodeMs = timeMs([&] { llvm::consumeError(encode->launch(le, args)); });
          const double outBytes = f == QuantFormat::Fp8PerHead ? in_bytes / 2 : in_bytes / 4 + in_bytes / 64;
          passes += fmt::format("{}{{\"format\":\"{}\",\"threads\":{},\"amax_ms\":{:.4f},\"amax_tb_s\":{:.3f},"
                                "\"encode_ms\":{:.4f},\"encode_tb_s\":{:.3f}}}",
                                passes.empty() ? "" : ",", toString(f), threads, amaxMs, in_bytes / amaxMs / 1e9,
                                encodeMs, (in_bytes + outBytes) / encodeMs / 1e9);
        }
      }
    }
    quant = fmt::format("{{\"shape\":[{},{},{},{}],\"copy_tb_s\":{:.3f},\"note\":\"Engine::quantize into reused "
                        "buffers, as a forward runs it\",\"formats\":[{}],\"passes_shape\":[8,16,4096,128],"
                        "\"calls\":[{}],\"passes\":[{}]}}",
                        B, H, S, D, copyTBs, rows, calls, passes);
  }
  const std::string json =
      fmt::format("{{\"target\":\"{}\",\"cold_compile_s\":{:.4f},\"nvrtc_s\":{:.4f},\"memory_hit_us\":{:.3f},"
                  "\"new_process_wall_s\":{:.4f},\"new_process_rc\":{},\"new_process\":{},\"quantize\":{}}}",
                  toString(target), coldS, nvrtcS, memoryUs, childWall, rc, childJson.empty() ? "{}" : childJson,
                  quant);
  llvm::sys::fs::remove_directories(dir);
  if (flags.has("json")) {
    std::printf("%s\n", json.c_str());
  } else {
    std::printf("cold compile (emit + key + NVRTC + publish): %.3f s (NVRTC %.3f s)\n", coldS, nvrtcS);
    std::printf("memory hit: %.2f us per lookup\n", memoryUs);
    std::printf("new process: %s (whole process %.3f s)\n", childJson.c_str(), childWall);
    std::printf("quantizers: %s\n", quant.c_str());
  }
  return rc == 0 ? 0 : 1;
}

} // namespace fa4jit::tools
