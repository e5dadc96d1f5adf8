#pragma once
// THE place that reads FA4JIT_* environment variables. Everything else receives these structs,
// so a setting is parsed (and rejected, with the variable named) once.
//
//   FA4JIT_CACHE_DIR          user cache (default $XDG_CACHE_HOME/fa4jit, else ~/.cache/fa4jit)
//   FA4JIT_SYSTEM_CACHE_DIR   read-only pre-compiled layer searched first
//   FA4JIT_CACHE_MAX_BYTES    user cache cap: bytes, or with K, M, G, T (binary) suffix
//   FA4JIT_DISABLE_CACHE      1/true/yes/on: no disk cache at all
//   FA4JIT_TUNE               off | on | replay (replay fails on a missing tuning record)
//   FA4JIT_LOG_LEVEL          trace | debug | info | warn | error | critical | off
//   FA4JIT_CHECK_FINITE       1/true/yes/on: a NaN or Inf input is an error (the forward then
//                             synchronizes); default off: it propagates to the rows it reaches
//   FA4JIT_QUANTIZE_PASSES    auto | cluster | pipelined | two: the quantizers' one-pass kernels
//                             where they fit (default auto; cluster or pipelined: that one only),
//                             or always the amax and encode passes (QuantizePasses below)
//   FA4JIT_REPRO_DIR          where failed compiles leave a reproducer (default <cache dir>/repro)
//   NVRTC_APPEND_FLAGS        NVRTC's own: read here only so that it enters the cache key
#include "fa4jit/cache/cache_config.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <spdlog/common.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fa4jit::runtime {

enum class TuneMode { Off, On, Replay };
const char *tuneModeName(TuneMode mode);

// What a NaN or Inf in an attention input does (docs/NUMERICS.md §1.3).
enum class NonFinitePolicy {
  // The output rows it reaches are NaN, as in BF16 attention; no synchronization (the default:
  // serving runtimes capture the forward in CUDA graphs, which a host check would break).
  Propagate,
  // An error naming the tensor, batch, head and row; each quantizer waits for its stream to
  // read its flags back (for debugging and data validation).
  Check,
};

// How the quantizers of NVFP4 rows, E4M3 rows and FP8 V^T run (templates/fa4jit/quantize): the
// same bits either way.
enum class QuantizePasses {
  // The one-pass cluster kernel where it runs (as Cluster); else, for NVFP4 and E4M3 rows, the
  // pipelined one-pass kernel where it runs (as Pipelined); else the two passes.
  Auto,
  // The one-pass cluster kernel where the device has clusters, x allows 16-byte loads and a head
  // fits the cluster's shared memory (x read once); the two passes elsewhere. For comparisons.
  Cluster,
  // NVFP4 and E4M3 rows: the pipelined one-pass kernel where the bytes it keeps in flight fit L2
  // (x read from memory once, then from L2); the two passes elsewhere. For comparisons.
  Pipelined,
  // Always the amax pass, then the encode pass (x read twice): for comparisons and tests.
  Two,
};
const char *quantizePassesName(QuantizePasses passes);

struct RuntimeConfig {
  cache::CacheConfig cache;
  TuneMode tune = TuneMode::Off;
  spdlog::level::level_enum log_level = spdlog::level::warn;
  NonFinitePolicy nonfinite = NonFinitePolicy::Propagate;
  QuantizePasses quantize_passes = QuantizePasses::Auto;
  std::string repro_dir; // empty when no directory could be derived
  // NVRTC_APPEND_FLAGS (read by NVRTC itself behind our options): part of every cache key, so a
  // kernel compiled with extra flags is never served to a process without them, or vice versa.
  std::string nvrtc_append_flags;
};

// The value of an environment variable, nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(llvm::StringRef name)>;

llvm::Expected<RuntimeConfig> loadConfig();
// Same, reading variables through `lookup` (tests pass a map).
llvm::Expected<RuntimeConfig> loadConfig(const EnvLookup &lookup);

// "4096", "512M", "10G", "1.5G" is rejected; suffixes K, M, G, T (optionally KiB, MiB, ...) are
// powers of 1024.
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef text);

} // namespace fa4jit::runtime
