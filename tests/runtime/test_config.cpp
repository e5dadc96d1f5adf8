// FA4JIT_* variables: defaults, every variable's effect, and a clear error naming the variable
// for a bad value.
#include "fa4jit/runtime/config.h"

#include <catch2/catch.hpp>

#include <map>

using namespace fa4jit::runtime;

namespace {
EnvLookup envOf(std::map<std::string, std::string> vars) {
  return [vars](llvm::StringRef name) -> std::optional<std::string> {
    auto it = vars.find(name.str());
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

RuntimeConfig mustLoad(std::map<std::string, std::string> vars) {
  llvm::Expected<RuntimeConfig> c = loadConfig(envOf(std::move(vars)));
  if (!c)
    FAIL(llvm::toString(c.takeError()));
  return std::move(*c);
}

std::string loadError(std::map<std::string, std::string> vars) {
  llvm::Expected<RuntimeConfig> c = loadConfig(envOf(std::move(vars)));
  return c ? std::string() : llvm::toString(c.takeError());
}
} // namespace

TEST_CASE("the cache directory falls back from FA4JIT_CACHE_DIR to XDG to HOME", "[config]") {
  CHECK(mustLoad({{"FA4JIT_CACHE_DIR", "/c"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}).cache.user_dir == "/c");
  CHECK(mustLoad({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}).cache.user_dir == "/x/fa4jit");
  CHECK(mustLoad({{"HOME", "/h"}}).cache.user_dir == "/h/.cache/fa4jit");
  CHECK(mustLoad({{"FA4JIT_CACHE_DIR", ""}, {"HOME", "/h"}}).cache.user_dir == "/h/.cache/fa4jit");
}

TEST_CASE("defaults", "[config]") {
  RuntimeConfig c = mustLoad({{"HOME", "/h"}});
  CHECK(c.cache.system_dir.empty());
  CHECK(c.cache.max_bytes == (uint64_t(4) << 30));
  CHECK_FALSE(c.cache.disable_disk);
  CHECK(c.tune == TuneMode::Off);
  CHECK(c.log_level == spdlog::level::warn);
  CHECK(c.nonfinite == NonFinitePolicy::Propagate);
  CHECK(c.repro_dir == "/h/.cache/fa4jit/repro");
}

TEST_CASE("every variable is read", "[config]") {
  RuntimeConfig c = mustLoad({{"FA4JIT_CACHE_DIR", "/c"},
                              {"FA4JIT_SYSTEM_CACHE_DIR", "/s"},
                              {"FA4JIT_CACHE_MAX_BYTES", "512M"},
                              {"FA4JIT_DISABLE_CACHE", "yes"},
                              {"FA4JIT_TUNE", "replay"},
                              {"FA4JIT_LOG_LEVEL", "debug"},
                              {"FA4JIT_REPRO_DIR", "/r"},
                              {"FA4JIT_CHECK_FINITE", "on"},
                              {"NVRTC_APPEND_FLAGS", "-lineinfo"}});
  CHECK(c.cache.user_dir == "/c");
  CHECK(c.cache.system_dir == "/s");
  CHECK(c.cache.max_bytes == (uint64_t(512) << 20));
  CHECK(c.cache.disable_disk);
  CHECK(c.tune == TuneMode::Replay);
  CHECK(std::string(tuneModeName(c.tune)) == "replay");
  CHECK(c.log_level == spdlog::level::debug);
  CHECK(c.repro_dir == "/r");
  CHECK(c.nonfinite == NonFinitePolicy::Check);
  CHECK(mustLoad({{"FA4JIT_CHECK_FINITE", "0"}}).nonfinite == NonFinitePolicy::Propagate);
  CHECK(c.nvrtc_append_flags == "-lineinfo");
  CHECK(mustLoad({{"FA4JIT_TUNE", "ON"}}).tune == TuneMode::On);
  CHECK(mustLoad({{"FA4JIT_DISABLE_CACHE", "0"}}).cache.disable_disk == false);
  CHECK(mustLoad({{"FA4JIT_LOG_LEVEL", "off"}}).log_level == spdlog::level::off);
  CHECK(mustLoad({}).quantize_passes == QuantizePasses::Auto);
  CHECK(mustLoad({{"FA4JIT_QUANTIZE_PASSES", "two"}}).quantize_passes == QuantizePasses::Two);
  CHECK(mustLoad({{"FA4JIT_QUANTIZE_PASSES", "AUTO"}}).quantize_passes == QuantizePasses::Auto);
  CHECK(mustLoad({{"FA4JIT_QUANTIZE_PASSES", "cluster"}}).quantize_passes == QuantizePasses::Cluster);
  for (QuantizePasses passes :
       {QuantizePasses::Auto, QuantizePasses::Cluster, QuantizePasses::Pipelined, QuantizePasses::Two})
    CHECK(mustLoad({{"FA4JIT_QUANTIZE_PASSES", quantizePassesName(passes)}}).quantize_passes == passes);
}

TEST_CASE("a bad value is an error that names the variable", "[config]") {
  CHECK_THAT(loadError({{"FA4JIT_TUNE", "sometimes"}}), Catch::Contains("FA4JIT_TUNE") && Catch::Contains("sometimes"));
  CHECK_THAT(loadError({{"FA4JIT_CACHE_MAX_BYTES", "lots"}}), Catch::Contains("FA4JIT_CACHE_MAX_BYTES"));
  CHECK_THAT(loadError({{"FA4JIT_DISABLE_CACHE", "maybe"}}), Catch::Contains("FA4JIT_DISABLE_CACHE"));
  CHECK_THAT(loadError({{"FA4JIT_LOG_LEVEL", "loud"}}), Catch::Contains("FA4JIT_LOG_LEVEL"));
  CHECK_THAT(loadError({{"FA4JIT_CHECK_FINITE", "strict"}}), Catch::Contains("FA4JIT_CHECK_FINITE"));
  CHECK_THAT(loadError({{"FA4JIT_QUANTIZE_PASSES", "one"}}),
             Catch::Contains("FA4JIT_QUANTIZE_PASSES") && Catch::Contains("auto, cluster, pipelined or two"));
  // A relative directory would differ per working directory: refused, naming the variable.
  for (const char *var : {"FA4JIT_CACHE_DIR", "FA4JIT_SYSTEM_CACHE_DIR", "FA4JIT_REPRO_DIR"})
    CHECK_THAT(loadError({{var, "relative/cache"}}), Catch::Contains(var) && Catch::Contains("absolute path"));
}

TEST_CASE("byte sizes take binary suffixes", "[config]") {
  auto bytes = [](const char *text) -> int64_t {
    llvm::Expected<uint64_t> v = parseByteSize(text);
    if (!v) {
      llvm::consumeError(v.takeError());
      return -1;
    }
    return int64_t(*v);
  };
  CHECK(bytes("0") == 0);
  CHECK(bytes("4096") == 4096);
  CHECK(bytes("10K") == 10240);
  CHECK(bytes("3 MiB") == 3 << 20);
  CHECK(bytes("2g") == int64_t(2) << 30);
  CHECK(bytes("1T") == int64_t(1) << 40);
  CHECK(bytes("7GB") == int64_t(7) << 30);
  CHECK(bytes("1.5G") == -1);
  CHECK(bytes("") == -1);
  CHECK(bytes("-1") == -1);
  CHECK(bytes("5Q") == -1);
  CHECK(bytes("99999999999T") == -1);
}
