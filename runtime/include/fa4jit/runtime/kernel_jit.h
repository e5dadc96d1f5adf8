#pragma once
// The JIT pipeline of docs/ARCHITECTURE.md §3 in one object: spec -> generated source (codegen) -> cache key
// (source, embedded headers, NVRTC identity, target, normalized options, schema) -> cache hit, or
// NVRTC compile under the key's lock and atomic publish -> compiled kernel (cubin + resource
// report). Loading into a device is separate (kernel_loader.h), so `fa4jit compile` and CI use
// this without a GPU.
#include "fa4jit/cache/kernel_cache.h"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/spec.h"
#include "fa4jit/runtime/compiler.h"
#include "fa4jit/runtime/config.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace fa4jit::runtime {

struct CompiledKernel {
  KernelSpec spec;
  EmittedKernel emitted;           // name, entry points, source
  std::string cache_key;           // digest
  cache::Layer layer;              // where the cubin came from (Produced = compiled now)
  std::vector<std::uint8_t> cubin;
  CubinInfo info;                  // registers, shared memory, stack frame, spills (if known)
  double compile_seconds = 0.0;    // 0 on a cache hit
  std::string compile_log;         // NVRTC/ptxas log of the compile that produced the cubin
};
using CompiledKernelPtr = std::shared_ptr<const CompiledKernel>;

class KernelJit {
public:
  static llvm::Expected<std::unique_ptr<KernelJit>> create(const RuntimeConfig &config);

  // The compiled kernel for `spec`: an in-process memo (keyed by the spec's canonical form),
  // then the cache layers, then NVRTC.
  llvm::Expected<CompiledKernelPtr> get(const KernelSpec &spec);
  // Many specs compiled in parallel on `threads` threads (0 = hardware threads); results in order.
  // `progress(done, total)` is called after each one.
  std::vector<llvm::Expected<CompiledKernelPtr>>
  getMany(llvm::ArrayRef<KernelSpec> specs, unsigned threads,
          const std::function<void(size_t, size_t)> &progress = {});

  cache::KernelCache &cache() { return *cache_; }
  const std::string &nvrtcIdentity() const { return nvrtc_identity_; }

private:
  KernelJit(const RuntimeConfig &config, std::unique_ptr<cache::KernelCache> cache, std::string nvrtcIdentity);
  llvm::Expected<CompiledKernelPtr> build(const KernelSpec &spec);

  RuntimeConfig config_;
  std::unique_ptr<cache::KernelCache> cache_;
  std::string nvrtc_identity_;
  std::mutex memo_mutex_;
  // Two memos: by a cheap hash of the spec's fields (compared with specsEqual), so a repeated
  // launch costs a few hundred nanoseconds; and by canonical JSON, where every build lands.
  std::unordered_multimap<std::size_t, std::pair<KernelSpec, CompiledKernelPtr>> fast_memo_;
  std::unordered_map<std::string, CompiledKernelPtr> memo_;
};

// The compile options every generated kernel uses for its target (enter the key via
// normalizedOptions()).
CompileOptions compileOptionsFor(const KernelSpec &spec);

} // namespace fa4jit::runtime
