// `fa4jit compile`: pre-compile kernels ahead of time into the user cache, or into a directory
// that a deployment ships as its read-only system layer (FA4JIT_SYSTEM_CACHE_DIR). Compiles in
// parallel with a progress line; reports registers, spills and shared memory per kernel.
#include "cli_flags.h"
#include "cli_values.h"
#include "progress.h"
#include "subcommands.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/variants.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/runtime/kernel_jit.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace fa4jit::tools {

namespace {
const char kUsage[] =
    "usage: fa4jit compile [options]\n"
    "\n"
    "Generates and compiles kernels (NVRTC, in parallel) into the cache, so a later process finds\n"
    "them without compiling. Without --all, compiles the default attention kernels of the\n"
    "selected routes/head dims/causal flags and the quantizers they need.\n"
    "\n"
    "options (lists are comma-separated):\n"
    "  --all               every variant the code generator can emit for the targets\n"
    "  --family F          attention | attention-backward | quantize | merge-states | paged-kv | all\n"
    "                      (default all)\n"
    "  --route LIST        bf16,nvfp8,directp,fp8,fp8-directp (default the first three)\n"
    "  --head-dim LIST     64,128,256 (default all)\n"
    "  --causal [LIST]     0, 1 or 0,1; alone it means 1 (default 0,1)\n"
    "  --target LIST       sm_90a,sm_100a,sm_89,sm_80 (default sm_90a)\n"
    "  --bundle DIR        write into DIR (a system bundle) instead of the user cache\n"
    "  --threads N         compile threads (default: all cores)\n"
    "  --json              one JSON array with every kernel's report\n"
    "  --help\n";

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit compile: %s\n", m.c_str());
  return 2;
}
} // namespace

int runCompile(int argc, char **argv) {
  CliFlags flags({{"all", FlagValue::None}, {"family"}, shared_flags::route(), shared_flags::headDim(),
                  shared_flags::causal(), shared_flags::target(), {"bundle"}, shared_flags::threads(),
                  shared_flags::json()});
  if (auto e = flags.parse(argc, argv))
    return std::fprintf(stderr, "fa4jit compile: %s\n%s", llvm::toString(std::move(e)).c_str(), kUsage), 2;
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  auto targets = targetsFlag(flags, "sm_90a");
  if (!targets)
    return fail(llvm::toString(targets.takeError()));
  const std::string family = flags.str("family", "all");
  if (family != "all" && family != "attention" && family != "quantize" && family != "attention-backward" &&
      family != "merge-states" && family != "paged-kv")
    return fail("--family must be attention, attention-backward, quantize, merge-states, paged-kv or all");
  auto routes = routePresetsFlag(flags, "bf16,nvfp8,directp");
  if (!routes)
    return fail(llvm::toString(routes.takeError()));
  auto dims = headDimsFlag(flags, "64,128,256");
  if (!dims)
    return fail(llvm::toString(dims.takeError()));
  auto causals = causalFlag(flags, "0,1");
  if (!causals)
    return fail(llvm::toString(causals.takeError()));
  auto threads = threadsFlag(flags);
  if (!threads)
    return fail(llvm::toString(threads.takeError()));

  std::vector<KernelSpec> specs;
  auto wanted = [&](const KernelSpec &s) {
    if (family != "all" && family != toString(s.family))
      return false;
    if (s.family == KernelFamily::AttentionBackward)
      return std::count(dims->begin(), dims->end(), s.backward.forward.head_dim) &&
             std::count(causals->begin(), causals->end(), s.backward.forward.causal);
    if (s.family == KernelFamily::MergeStates)
      return std::count(dims->begin(), dims->end(), s.merge.head_dim) > 0;
    if (s.family == KernelFamily::PagedKv)
      return std::count(dims->begin(), dims->end(), s.paged.head_dim) > 0;
    if (s.family != KernelFamily::AttentionForward)
      return true;
    const AttentionSpec &a = s.attention;
    return std::count(routes->begin(), routes->end(), RoutePreset{a.route, a.operands.qk_format}) &&
           std::count(dims->begin(), dims->end(), a.head_dim) &&
           std::count(causals->begin(), causals->end(), a.causal);
  };
  if (flags.has("all")) {
    for (const KernelSpec &s : enumerateVariants(*targets))
      if (wanted(s))
        specs.push_back(s);
  } else {
    for (Target t : *targets) {
      if (family == "attention-backward" || (family == "all" && t == Target::Sm90a))
        for (int d : *dims)
          for (bool c : *causals)
            if (d != 256)
              specs.push_back(defaultBackwardSpec(d, c, 0.0f, t));
      if (family == "attention" || family == "all")
        for (const RoutePreset &r : *routes)
          for (int d : *dims)
            for (bool c : *causals)
              specs.push_back(withQkFormat(defaultAttentionSpec(r.route, d, c, t), r.qk_format));
      if (family == "merge-states" || family == "all")
        for (const KernelSpec &m : enumerateMergeVariants(t))
          if (std::count(dims->begin(), dims->end(), m.merge.head_dim))
            specs.push_back(m);
      if (family == "paged-kv" || family == "all")
        for (const KernelSpec &m : enumeratePagedKvVariants(t))
          if (std::count(dims->begin(), dims->end(), m.paged.head_dim))
            specs.push_back(m);
      if (family == "quantize" || family == "all")
        for (const KernelSpec &q : enumerateQuantizeVariants(t))
          if (!q.quantize.input_fp32 && !q.quantize.keys_permuted16 &&
              std::count(dims->begin(), dims->end(), q.quantize.head_dim))
            specs.push_back(q);
    }
  }

  auto config = runtime::loadConfig();
  if (!config)
    return fail(llvm::toString(config.takeError()));
  if (flags.has("bundle")) {
    config->cache.user_dir = flags.str("bundle", "");
    config->cache.system_dir.clear(); // a bundle holds everything it is asked for
    config->cache.disable_disk = false;
  }
  auto jit = runtime::KernelJit::create(*config);
  if (!jit)
    return fail(llvm::toString(jit.takeError()));
  if (flags.has("bundle") && !(*jit)->cache().hasUserLayer()) // (the cache fell back to memory)
    return fail("--bundle " + flags.str("bundle", "") + ": the directory cannot hold a cache (see the warning above)");
  const bool json = flags.has("json");
  ProgressLine progress(!json);
  auto results = (*jit)->getMany(specs, *threads,
                                 [&](size_t done, size_t total) { progress.update("compiled", done, total); });
  progress.clear();

  int failures = 0;
  llvm::json::Array rows;
  if (!json)
    std::printf("%-48s %-8s %-9s %8s %5s %7s %8s\n", "kernel", "target", "source", "compile", "regs", "spills",
                "smem");
  for (size_t i = 0; i < specs.size(); ++i) {
    llvm::json::Object row{{"spec", toJson(specs[i])}, {"target", toString(specs[i].target)}};
    if (!results[i]) {
      ++failures;
      const std::string msg = llvm::toString(results[i].takeError());
      row["error"] = msg;
      if (!json)
        std::printf("%-48s %-8s FAILED\n%s\n", kernelName(specs[i]).c_str(), toString(specs[i].target), msg.c_str());
      rows.push_back(std::move(row));
      continue;
    }
    const runtime::CompiledKernel &k = **results[i];
    llvm::json::Array entries;
    for (const EntryPoint &e : k.emitted.entries) {
      const runtime::CubinKernelInfo *ki = k.info.find(e.name);
      entries.push_back(llvm::json::Object{{"name", e.name},
                                           {"threads", e.threads},
                                           {"dynamic_shared_bytes", e.dynamic_shared_bytes},
                                           {"registers", ki ? ki->registers : -1},
                                           {"stack_frame_bytes", ki ? ki->stack_frame_bytes : -1},
                                           {"spill_store_bytes", ki ? ki->spill_store_bytes : -1},
                                           {"spill_load_bytes", ki ? ki->spill_load_bytes : -1},
                                           {"wgmma_serialized", ki ? ki->wgmma_serialized : -1},
                                           {"static_shared_bytes", ki ? ki->static_shared_bytes : -1}});
      if (!json)
        std::printf("%-48s %-8s %-9s %7.2fs %5d %7d %8d\n", e.name.c_str(), toString(k.spec.target),
                    cache::layerName(k.layer), k.compile_seconds, ki ? ki->registers : -1,
                    ki ? ki->spill_store_bytes : -1, e.dynamic_shared_bytes + (ki ? ki->static_shared_bytes : 0));
    }
    row["kernel"] = k.emitted.name;
    row["cache_key"] = k.cache_key;
    row["source"] = cache::layerName(k.layer);
    row["compile_seconds"] = k.compile_seconds;
    row["entries"] = std::move(entries);
    rows.push_back(std::move(row));
  }
  if (json) {
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(rows))) << "\n";
    llvm::outs().flush();
  } else {
    std::printf("\n%zu kernels, %d failed\n", specs.size(), failures);
  }
  return failures ? 1 : 0;
}

} // namespace fa4jit::tools
