// spec -> source -> key -> cache (or NVRTC) -> CompiledKernel. The cache stores the cubin with
// the source, the canonical spec and the compile log, so `fa4jit cache ls` can show what an
// entry is and a failed load can be reproduced from the entry alone.
#include "fa4jit/runtime/kernel_jit.h"

#include "fa4jit/logging/log.h"

#include "fa4jit/cache/cache_key.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/runtime/gpu_arch.h"
#include "fa4jit/runtime/nvrtc_library.h"
#include "fa4jit/templates/embedded.h"

#include "llvm/Support/ThreadPool.h"

#include <atomic>

namespace fa4jit::runtime {

namespace {

constexpr const char *kCubinFile = "kernel.cubin";
constexpr const char *kSourceFile = "kernel.cu";
constexpr const char *kSpecFile = "spec.json";
constexpr const char *kLogFile = "compile.log";

cache::CacheKey keyFor(const EmittedKernel &emitted, const KernelSpec &spec,
                       const std::vector<std::string> &options, const std::string &nvrtcIdentity,
                       const std::string &nvrtcAppendFlags) {
  cache::CacheKeyBuilder builder;
  builder.source(emitted.source).target(toString(spec.target)).options(options).part("nvrtc", nvrtcIdentity);
  builder.part("kernel", emitted.name); // (named by the source already; shown by `fa4jit cache ls`)
  builder.part("env:NVRTC_APPEND_FLAGS", nvrtcAppendFlags);
  std::size_t count = 0;
  const templates::EmbeddedHeader *headers = templates::embeddedHeaders(&count);
  // Every embedded header, not only those the source includes directly: headers include each
  // other, and a key that missed one would serve a stale kernel (Triton #11817).
  for (std::size_t i = 0; i < count; ++i)
    builder.header(headers[i].name, llvm::StringRef(headers[i].contents, headers[i].size));
  return builder.build();
}

// Hash of the fields that most often tell specs apart; equality is decided by specsEqual.
std::size_t quickSpecHash(const KernelSpec &s) {
  const AttentionSpec &a = s.attention;
  const QuantizeSpec &q = s.quantize;
  std::size_t h = static_cast<std::size_t>(s.family) * 1000003u + static_cast<std::size_t>(s.target);
  for (int v : {int(a.route), a.head_dim, int(a.causal), a.tile.shape.block_m, a.tile.shape.block_n, a.tile.pipeline.stages,
                int(a.tile.schedule.kernel), int(a.classifier.kind), int(q.format), q.head_dim, int(q.input_fp32) + 2 * int(q.input_fp16),
                int(q.keys_permuted16)})
    h = h * 31u + static_cast<std::size_t>(v);
  return h;
}

} // namespace

CompileOptions compileOptionsFor(const KernelSpec &spec) {
  CompileOptions options;
  options.arch = archForTarget(spec.target);
  return options;
}

KernelJit::KernelJit(const RuntimeConfig &config, std::unique_ptr<cache::KernelCache> cache,
                     std::string nvrtcIdentity)
    : config_(config), cache_(std::move(cache)), nvrtc_identity_(std::move(nvrtcIdentity)) {}

llvm::Expected<std::unique_ptr<KernelJit>> KernelJit::create(const RuntimeConfig &config) {
  logging::logger().set_level(config.log_level); // (FA4JIT_LOG_LEVEL, or the caller's config)
  // NVRTC is needed for a compile, and its identity for every key (a cache hit built by another
  // NVRTC build must not be served), so a JIT without NVRTC is refused up front.
  auto nvrtc = NvrtcLibrary::get();
  if (!nvrtc)
    return nvrtc.takeError();
  return std::unique_ptr<KernelJit>(
      new KernelJit(config, cache::KernelCache::open(config.cache), nvrtc->identity()));
}

llvm::Expected<CompiledKernelPtr> KernelJit::get(const KernelSpec &spec) {
  const std::size_t quick = quickSpecHash(spec);
  {
    std::lock_guard<std::mutex> lock(memo_mutex_);
    auto range = fast_memo_.equal_range(quick);
    for (auto it = range.first; it != range.second; ++it)
      if (specsEqual(it->second.first, spec))
        return it->second.second;
  }
  const std::string memoKey = toJson(spec);
  CompiledKernelPtr kernel;
  {
    std::lock_guard<std::mutex> lock(memo_mutex_);
    auto it = memo_.find(memoKey);
    if (it != memo_.end())
      kernel = it->second;
  }
  if (!kernel) {
    auto built = build(spec);
    if (!built)
      return built.takeError();
    std::lock_guard<std::mutex> lock(memo_mutex_);
    kernel = memo_.emplace(memoKey, *built).first->second;
  }
  std::lock_guard<std::mutex> lock(memo_mutex_);
  fast_memo_.emplace(quick, std::make_pair(spec, kernel));
  return kernel;
}

llvm::Expected<CompiledKernelPtr> KernelJit::build(const KernelSpec &spec) {
  auto emitted = emitKernel(spec);
  if (!emitted)
    return emitted.takeError();
  const CompileOptions options = compileOptionsFor(spec);
  auto normalized = normalizedOptions(options);
  if (!normalized)
    return normalized.takeError();
  const cache::CacheKey key = keyFor(*emitted, spec, *normalized, nvrtc_identity_, config_.nvrtc_append_flags);

  auto result = std::make_shared<CompiledKernel>();
  result->spec = spec;
  result->emitted = *emitted;
  result->cache_key = key.digest;

  CompilerConfig compilerConfig;
  compilerConfig.repro_dir = config_.repro_dir;
  bool produced = false;
  auto entry = cache_->getOrCreate(key, [&]() -> llvm::Expected<cache::EntryFiles> {
    CompileRequest request;
    request.name = emitted->name + ".cu";
    request.source = emitted->source;
    request.options = options;
    auto compiled = compile(request, compilerConfig);
    if (!compiled)
      return compiled.takeError();
    produced = true;
    result->compile_seconds = compiled->seconds;
    cache::EntryFiles files;
    files[kCubinFile] = std::string(compiled->cubin.begin(), compiled->cubin.end());
    files[kSourceFile] = emitted->source;
    files[kSpecFile] = toJson(spec, 2);
    files[kLogFile] = compiled->log;
    return files;
  });
  if (!entry)
    return entry.takeError();
  const std::string *cubin = (*entry)->file(kCubinFile);
  if (!cubin)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cache entry %s has no %s", key.digest.c_str(), kCubinFile);
  result->layer = produced ? cache::Layer::Produced : (*entry)->layer;
  result->cubin.assign(cubin->begin(), cubin->end());
  if (const std::string *log = (*entry)->file(kLogFile))
    result->compile_log = *log;
  auto info = readCubinInfo(result->cubin);
  if (!info)
    return info.takeError();
  // An entry is found by the hash of its source, but its cubin is only what its writer put there:
  // it must define every entry point that source declares, or it is not this kernel.
  for (const EntryPoint &ep : emitted->entries)
    if (!info->find(ep.name))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cache entry %s (%s layer) is not trusted: its cubin lacks the entry point %s; "
                                     "'fa4jit cache verify --fix' removes damaged user entries",
                                     key.digest.c_str(), cache::layerName(result->layer), ep.name.c_str());
  result->info = std::move(*info);
  addPtxasSpillCounts(result->compile_log, result->info);
  return CompiledKernelPtr(std::move(result));
}

std::vector<llvm::Expected<CompiledKernelPtr>>
KernelJit::getMany(llvm::ArrayRef<KernelSpec> specs, unsigned threads,
                   const std::function<void(size_t, size_t)> &progress) {
  std::vector<llvm::Expected<CompiledKernelPtr>> results;
  results.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    results.emplace_back(CompiledKernelPtr());
  llvm::ThreadPool pool(threads ? llvm::hardware_concurrency(threads) : llvm::hardware_concurrency());
  std::atomic<size_t> done{0};
  std::mutex progressMutex;
  for (size_t i = 0; i < specs.size(); ++i)
    pool.async([&, i] {
      auto r = get(specs[i]);
      results[i] = std::move(r);
      const size_t n = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progressMutex);
        progress(n, specs.size());
      }
    });
  pool.wait();
  return results;
}

} // namespace fa4jit::runtime
