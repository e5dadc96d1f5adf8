// `fa4jit jit-bench`: the JIT's own costs: cold NVRTC compile of one
// attention kernel, a disk-cache hit in a new process up to a launchable kernel, an in-process
// (memory) hit, and on a GPU the quantizers' bandwidth beside a device copy of the same run.
#include "cli_flags.h"
#include "bench_support.h"
#include "cli_values.h"
#include "subcommands.h"

#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/quantize/params.cuh"
#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/gpu_arch.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <chrono>
#include <unistd.h>
#include <cstdio>

namespace fa4jit::tools {

namespace {

const char kUsage[] =
    "usage: fa4jit jit-bench [--target T] [--head-dim LIST] [--json]\n"
    "\n"
    "Measures, for the default directp D128 attention kernel: a cold compile (fresh cache\n"
    "directory), a disk-cache hit in a new process up to a launchable kernel (loaded into the GPU\n"
    "when there is one), and the in-process memory hit; on a GPU also the quantizers' bandwidth\n"
    "(input read + outputs written) against a device-to-device copy of the same size, and at the\n"
    "4k-key shape `fa4jit bench` runs for each --head-dim (default 128), each pass alone.\n";

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit jit-bench: %s\n", m.c_str());
  return 1;
}

void printJson(llvm::json::Value v) {
  std::printf("%s\n", llvm::formatv("{0}", v).str().c_str());
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
    printJson(llvm::json::Object{{"setup_s", setup},
                                 {"hit_to_launchable_s", secondsSince(t1)},
                                 {"layer", cache::layerName((*compiled)->layer)},
                                 {"loaded", true}});
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
  printJson(llvm::json::Object{{"setup_s", setup},
                               {"hit_to_launchable_s", secondsSince(t1)},
                               {"layer", cache::layerName((*compiled)->layer)},
                               {"loaded", false}});
  return (*compiled)->layer == cache::Layer::Produced ? 1 : 0;
}

// Median of 10 runs between device events after one warm-up (bench_support.h), in milliseconds.
llvm::Expected<double> medianMs(Engine &eng, const std::function<llvm::Error()> &fn) {
  auto timed = timeOnDevice(eng, [&](int) { return fn(); }, 1, 10);
  if (!timed)
    return timed.takeError();
  return timed->median_ms;
}

// Bytes a quantizer writes for `in_bytes` of BF16 input: payload and scales (NVFP4 and MXFP4
// about 4.5 bits per element, FP8 8 bits).
double quantizedBytes(QuantFormat f, double in_bytes) {
  return f == QuantFormat::Fp8PerHead ? in_bytes / 2 : in_bytes / 4 + in_bytes / (f == QuantFormat::Nvfp4 ? 32 : 64);
}

// The quantizers' bandwidth beside a device copy: each format's whole Engine::quantize call on a
// large tensor, then at the 4k-key shape `fa4jit bench` runs for each head dim, the whole call and
// per CTA size each pass alone and the one-pass cluster kernel at each cluster size (where the
// quantizers' time goes).
llvm::Expected<llvm::json::Value> measureQuantizers(Engine &eng, const std::vector<int> &dims) {
  namespace dq = device::quantize;
  constexpr QuantFormat kFormats[] = {QuantFormat::Nvfp4, QuantFormat::Mxfp4, QuantFormat::Fp8PerHead};
  const int B = 16, H = 16, S = 8192, D = 128;
  const std::size_t elems = std::size_t(B) * H * S * D;
  auto x = runtime::DeviceBuffer::allocate(eng.driver(), elems * 2);
  if (!x)
    return x.takeError();
  auto y = runtime::DeviceBuffer::allocate(eng.driver(), elems * 2);
  if (!y)
    return y.takeError();
  std::vector<uint16_t> values(elems);
  for (std::size_t i = 0; i < elems; ++i)
    values[i] = uint16_t(0x3F80 + (i * 2654435761u % 97)); // bf16 values in [1, 2): varied, finite
  if (auto e = x->copyFromHost(values.data(), elems * 2))
    return e;
  auto copy_ms = medianMs(eng, [&] { return y->copyFrom(*x, elems * 2); });
  if (!copy_ms)
    return copy_ms.takeError();
  const double copy_tbs = 2.0 * elems * 2 / (*copy_ms * 1e-3) / 1e12;
  auto rate = [&](QuantFormat f, double in_bytes, double ms) {
    const double tbs = (in_bytes + quantizedBytes(f, in_bytes)) / (ms * 1e-3) / 1e12;
    return llvm::json::Object{{"format", toString(f)}, {"ms", ms}, {"tb_s", tbs}, {"fraction_of_copy", tbs / copy_tbs}};
  };

  llvm::json::Array formats;
  const TensorDesc desc = TensorDesc::contiguous(x->address(), DType::BF16, B, H, S, D);
  for (QuantFormat f : kFormats) {
    QuantizedTensor out; // (its buffers are reused by every timed call, as a forward reuses its workspace)
    auto ms = medianMs(eng, [&] { return eng.quantize(desc, f, out, "x"); });
    if (!ms)
      return ms.takeError();
    formats.push_back(rate(f, 2.0 * elems, *ms));
  }

  llvm::json::Array shapes;
  for (int d : dims) {
    const int ph = d == 64 ? 32 : d == 128 ? 16 : 8, ps = 4096, pb = 524288 / (ph * ps); // (bench's 4k shape)
    const double in_bytes = 2.0 * pb * ph * ps * d;
    const TensorDesc px = TensorDesc::contiguous(x->address(), DType::BF16, pb, ph, ps, d);
    llvm::json::Array calls, passes;
    for (QuantFormat f : kFormats) {
      QuantizedTensor out;
      if (auto e = eng.quantize(px, f, out, "x"))
        return e;
      auto call_ms = medianMs(eng, [&] { return eng.quantize(px, f, out, "x"); });
      if (!call_ms)
        return call_ms.takeError();
      calls.push_back(rate(f, in_bytes, *call_ms));
      for (int threads : {128, 256, 512}) {
        KernelSpec qs = defaultQuantizeSpec(f, d, eng.target());
        qs.quantize.threads = threads;
        auto compiled = eng.jit().get(qs);
        if (!compiled) { // (a CTA size the format's spec rules refuse)
          llvm::consumeError(compiled.takeError());
          continue;
        }
        const auto &entries = (*compiled)->emitted.entries;
        auto amax = eng.kernel(qs, entries.at(0).name);
        if (!amax)
          return amax.takeError();
        auto encode = eng.kernel(qs, entries.at(1).name);
        if (!encode)
          return encode.takeError();
        dq::QuantizeParams p{};
        p.x = px.data, p.payload = out.payload.address();
        p.scales = f == QuantFormat::Fp8PerHead ? 0 : out.scales.address();
        p.head_scalar = out.head_scalar.address(), p.amax_partial = out.amax_partial.address();
        p.nonfinite_rows = out.nonfinite_rows.address();
        p.x_batch_stride = px.stride[0], p.x_head_stride = px.stride[1], p.x_row_stride = px.stride[2];
        p.batch = pb, p.heads = ph, p.seqlen = ps, p.amax_chunks = dq::quantizeDefaultAmaxChunks(1, pb * ph, ps);
        void *args[] = {&p};
        runtime::LaunchConfig la, le;
        la.grid = {unsigned(p.amax_chunks), unsigned(pb * ph), 1};
        la.block = {unsigned(threads), 1, 1};
        const dq::Grid3 g = dq::quantizeEncodeGrid(int(f), d, threads, pb, ph, ps);
        le.grid = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
        le.block = {unsigned(threads), 1, 1};
        auto amax_ms = medianMs(eng, [&] { return amax->launch(la, args); });
        if (!amax_ms)
          return amax_ms.takeError();
        auto encode_ms = medianMs(eng, [&] { return encode->launch(le, args); });
        if (!encode_ms)
          return encode_ms.takeError();
        llvm::json::Object pass{{"format", toString(f)},
                                {"threads", threads},
                                {"amax_ms", *amax_ms},
                                {"amax_tb_s", in_bytes / *amax_ms / 1e9},
                                {"encode_ms", *encode_ms},
                                {"encode_tb_s", (in_bytes + quantizedBytes(f, in_bytes)) / *encode_ms / 1e9}};
        // The one-pass cluster kernel at each cluster size whose slices fit a CTA.
        llvm::json::Array clusters;
        if (const EntryPoint *cluster_entry = entryWithSuffix((*compiled)->emitted, kQuantizeClusterSuffix)) {
          auto cluster = eng.kernel(qs, cluster_entry->name);
          if (!cluster)
            return cluster.takeError();
          for (int ctas = 2; ctas <= dq::kQuantizeClusterMaxCtas; ctas *= 2) {
            const int64_t slice = dq::quantizeClusterSliceBytes(ps, d, 2, ctas);
            if (slice > eng.device().max_shared_per_block_optin - 1024)
              continue;
            runtime::LaunchConfig lc;
            lc.grid = {unsigned(ctas), unsigned(pb * ph), 1};
            lc.block = {unsigned(threads), 1, 1};
            lc.cluster = {unsigned(ctas), 1, 1};
            lc.dynamic_shared_bytes = unsigned(slice);
            auto resident = cluster->maxActiveClusters(lc);
            if (!resident)
              return resident.takeError();
            if (*resident < 1)
              continue;
            auto cluster_ms = medianMs(eng, [&] { return cluster->launch(lc, args); });
            if (!cluster_ms)
              return cluster_ms.takeError();
            llvm::json::Object c = rate(f, in_bytes, *cluster_ms);
            c["ctas"] = ctas;
            c["slice_kib"] = double(slice) / 1024;
            c["resident_clusters"] = *resident;
            clusters.push_back(std::move(c));
          }
        }
        pass["cluster"] = std::move(clusters);
        // The pipelined one-pass kernel, its grid all resident (as the engine launches it).
        if (const EntryPoint *pipelined_entry = entryWithSuffix((*compiled)->emitted, kQuantizePipelinedSuffix)) {
          auto pipelined = eng.kernel(qs, pipelined_entry->name);
          if (!pipelined)
            return pipelined.takeError();
          runtime::LaunchConfig lp;
          lp.block = {unsigned(threads), 1, 1};
          auto per_sm = pipelined->maxActiveBlocksPerSm(lp);
          if (!per_sm)
            return per_sm.takeError();
          dq::QuantizeParams pp = p;
          pp.amax_chunks = dq::quantizePipelinedGroups(ps, threads, d);
          const int64_t items = int64_t(pp.amax_chunks) * pb * ph;
          const int grid = int(std::min<int64_t>(items, int64_t(*per_sm) * eng.device().sm_count));
          lp.grid = {unsigned(grid), 1, 1};
          auto sync = runtime::DeviceBuffer::allocate(eng.driver(), std::size_t(dq::quantizeSyncWords(pb * ph)) * 4);
          if (!sync)
            return sync.takeError();
          if (auto e = sync->fill(0)) // (every launch leaves the words zero)
            return e;
          pp.sync = sync->address();
          void *pargs[] = {&pp};
          auto pipelined_ms = medianMs(eng, [&] { return pipelined->launch(lp, pargs); });
          if (!pipelined_ms)
            return pipelined_ms.takeError();
          llvm::json::Object o = rate(f, in_bytes, *pipelined_ms);
          o["grid"] = grid;
          o["lag"] = dq::quantizePipelinedLag(pp.amax_chunks, grid);
          o["mib_in_flight"] =
              double(dq::quantizePipelinedBytesInFlight(pp.amax_chunks, grid, threads, d, 2)) / (1 << 20);
          pass["pipelined"] = std::move(o);
        }
        passes.push_back(std::move(pass));
      }
    }
    shapes.push_back(llvm::json::Object{{"shape", llvm::json::Array{pb, ph, ps, d}},
                                        {"calls", std::move(calls)},
                                        {"passes", std::move(passes)}});
  }
  return llvm::json::Object{{"shape", llvm::json::Array{B, H, S, D}},
                            {"copy_tb_s", copy_tbs},
                            {"note", "Engine::quantize into reused buffers, as a forward runs it"},
                            {"formats", std::move(formats)},
                            {"bench_shapes", std::move(shapes)}};
}

// Host time of the calls a user makes, per route at bench's 4k-key shape of each head dim: how
// long Engine::forward (from BF16, and on operands quantized beforehand) and Engine::quantize take
// to return, their launches queued and the GPU left to run them. A call whose GPU work is queued
// behind a busy stream costs only this; a call on an idle stream waits this long before its
// first kernel starts.
llvm::Expected<llvm::json::Value> measureHostTime(Engine &eng, const std::vector<int> &dims) {
  auto idle = runtime::Event::create(eng.driver());
  if (!idle)
    return idle.takeError();
  auto synchronize = [&]() -> llvm::Error {
    if (auto e = idle->record())
      return e;
    return idle->synchronize();
  };
  llvm::json::Array rows;
  for (int d : dims) {
    AttnShape s;
    s.head_dim = d, s.seqlen_q = s.seqlen_k = 4096;
    s.heads_q = s.heads_kv = d == 64 ? 32 : d == 128 ? 16 : 8;
    s.batch = 524288 / (s.heads_q * s.seqlen_q);
    auto in = makeDeviceInputs(eng, s, 7);
    if (!in)
      return in.takeError();
    for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
      const ForwardArgs a = in->args(s, route);
      const QuantFormat v_format = route == Route::Nvfp8 ? QuantFormat::Fp8PerHead : QuantFormat::Mxfp4;
      QuantizedTensor qq, qk, qv;
      auto hostUs = [&](auto &&call) -> llvm::Expected<double> {
        std::vector<double> us;
        for (int i = 0; i < 13; ++i) {
          if (auto e = synchronize()) // (an idle stream: the call's host time alone)
            return e;
          const auto t0 = Clock::now();
          if (auto e = call())
            return e;
          if (i >= 3) // (after warm-up: compiled, loaded, workspace grown)
            us.push_back(secondsSince(t0) * 1e6);
        }
        std::sort(us.begin(), us.end());
        return us[us.size() / 2];
      };
      // deviceMs: the same calls between device events from an idle stream, as `fa4jit bench` times them.
      const auto deviceMs = [&](const std::function<llvm::Error()> &call) { return medianMs(eng, call); };
      auto forward_us = hostUs([&] { return eng.forward(a); });
      if (!forward_us)
        return forward_us.takeError();
      auto forward_ms = deviceMs([&] { return eng.forward(a); });
      if (!forward_ms)
        return forward_ms.takeError();
      llvm::json::Object row{
          {"route", toString(route)}, {"head_dim", d}, {"forward_us", *forward_us}, {"forward_device_ms", *forward_ms}};
      if (route != Route::Bf16) {
        auto quantize_us = hostUs([&] { return eng.quantize(a.k, QuantFormat::Nvfp4, qk, "k"); });
        if (!quantize_us)
          return quantize_us.takeError();
        if (auto e = eng.quantize(a.q, QuantFormat::Nvfp4, qq, "q"))
          return e;
        if (auto e = eng.quantize(a.v, v_format, qv, "v"))
          return e;
        QuantizedForwardArgs qa;
        qa.q = &qq, qa.k = &qk, qa.v = &qv, qa.o = a.o, qa.lse = a.lse, qa.route = route;
        auto quantized_us = hostUs([&] { return eng.forward(qa); });
        if (!quantized_us)
          return quantized_us.takeError();
        auto quantized_ms = deviceMs([&] { return eng.forward(qa); });
        if (!quantized_ms)
          return quantized_ms.takeError();
        auto quantize_ms = deviceMs([&]() -> llvm::Error {
          if (auto e = eng.quantize(a.q, QuantFormat::Nvfp4, qq, "q"))
            return e;
          if (auto e = eng.quantize(a.k, QuantFormat::Nvfp4, qk, "k"))
            return e;
          return eng.quantize(a.v, v_format, qv, "v");
        });
        if (!quantize_ms)
          return quantize_ms.takeError();
        row["quantize_nvfp4_us"] = *quantize_us;
        row["forward_quantized_us"] = *quantized_us;
        row["forward_quantized_device_ms"] = *quantized_ms;
        row["quantize_qkv_device_ms"] = *quantize_ms;
      }
      rows.push_back(std::move(row));
    }
  }
  if (auto e = synchronize())
    return e;
  return llvm::json::Value(std::move(rows));
}

} // namespace

int runJitBench(int argc, char **argv) {
  CliFlags flags({shared_flags::target(), shared_flags::headDim(), {"phase"}, shared_flags::json()});
  if (auto e = flags.parse(argc, argv))
    return std::fprintf(stderr, "fa4jit jit-bench: %s\n%s", llvm::toString(std::move(e)).c_str(), kUsage), 2;
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  auto dims = headDimsFlag(flags, "128");
  if (!dims)
    return std::fprintf(stderr, "fa4jit jit-bench: %s\n", llvm::toString(dims.takeError()).c_str()), 2;
  auto engine = Engine::create();
  Target target = Target::Sm90a;
  if (engine) {
    target = (*engine)->target();
  } else {
    llvm::consumeError(engine.takeError());
    auto t = targetFlag(flags, "sm_90a");
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

  llvm::json::Value quant = nullptr, host_time = nullptr;
  if (engine) {
    auto measured = measureQuantizers(**engine, *dims);
    if (!measured)
      return fail(llvm::toString(measured.takeError()));
    quant = std::move(*measured);
    auto host = measureHostTime(**engine, *dims);
    if (!host)
      return fail(llvm::toString(host.takeError()));
    host_time = std::move(*host);
  }
  llvm::Expected<llvm::json::Value> child = llvm::json::parse(childJson);
  if (!child)
    llvm::consumeError(child.takeError());
  llvm::json::Object report{{"target", toString(target)},
                            {"cold_compile_s", coldS},
                            {"nvrtc_s", nvrtcS},
                            {"memory_hit_us", memoryUs},
                            {"new_process_wall_s", childWall},
                            {"new_process_rc", rc},
                            {"new_process", child ? std::move(*child) : llvm::json::Value(nullptr)},
                            {"quantize", quant},
                            {"host_time", host_time}};
  llvm::sys::fs::remove_directories(dir);
  if (flags.has("json")) {
    printJson(std::move(report));
  } else {
    std::printf("cold compile (emit + key + NVRTC + publish): %.3f s (NVRTC %.3f s)\n", coldS, nvrtcS);
    std::printf("memory hit: %.2f us per lookup\n", memoryUs);
    std::printf("new process: %s (whole process %.3f s)\n", childJson.c_str(), childWall);
    std::printf("quantizers: %s\n", llvm::formatv("{0:2}", quant).str().c_str());
    std::printf("host time per call: %s\n", llvm::formatv("{0:2}", host_time).str().c_str());
  }
  return rc == 0 ? 0 : 1;
}

} // namespace fa4jit::tools
