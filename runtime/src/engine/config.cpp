#include "fa4jit/runtime/config.h"

#include <cstdlib>
#include <pwd.h>
#include <unistd.h>

namespace fa4jit::runtime {
namespace {

llvm::Error badValue(llvm::StringRef variable, llvm::StringRef value, llvm::StringRef expected) {
  return llvm::createStringError(std::errc::invalid_argument, "%s='%s' is not valid: expected %s",
                                 variable.str().c_str(), value.str().c_str(), expected.str().c_str());
}

// An empty variable counts as unset, as shells make "FOO= cmd" easy to type by accident.
std::optional<std::string> nonEmpty(const EnvLookup &lookup, llvm::StringRef name) {
  std::optional<std::string> v = lookup(name);
  if (v && v->empty())
    return std::nullopt;
  return v;
}

std::string homeDirectory(const EnvLookup &lookup) {
  if (auto home = nonEmpty(lookup, "HOME"))
    return *home;
  struct passwd pw, *found = nullptr;
  char buffer[4096];
  if (::getpwuid_r(::geteuid(), &pw, buffer, sizeof buffer, &found) == 0 && found && found->pw_dir)
    return found->pw_dir;
  return "";
}

llvm::Expected<bool> parseBool(llvm::StringRef variable, llvm::StringRef value) {
  std::string v = value.lower();
  if (v == "1" || v == "true" || v == "yes" || v == "on")
    return true;
  if (v == "0" || v == "false" || v == "no" || v == "off")
    return false;
  return badValue(variable, value, "1, true, yes, on, 0, false, no or off");
}

llvm::Expected<TuneMode> parseTune(llvm::StringRef value) {
  std::string v = value.lower();
  if (v == "off")
    return TuneMode::Off;
  if (v == "on")
    return TuneMode::On;
  if (v == "replay")
    return TuneMode::Replay;
  return badValue("FA4JIT_TUNE", value, "off, on or replay");
}

llvm::Expected<spdlog::level::level_enum> parseLogLevel(llvm::StringRef value) {
  std::string v = value.lower();
  if (v == "warning")
    v = "warn";
  static const std::pair<const char *, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
      {"off", spdlog::level::off}};
  for (const auto &[name, level] : kLevels)
    if (v == name)
      return level;
  return badValue("FA4JIT_LOG_LEVEL", value, "trace, debug, info, warn, error, critical or off");
}

llvm::Expected<QuantizePasses> parseQuantizePasses(llvm::StringRef value) {
  const std::string v = value.lower();
  if (v == "auto")
    return QuantizePasses::Auto;
  if (v == "cluster")
    return QuantizePasses::Cluster;
  if (v == "pipelined")
    return QuantizePasses::Pipelined;
  if (v == "two")
    return QuantizePasses::Two;
  return badValue("FA4JIT_QUANTIZE_PASSES", value, "auto, cluster, pipelined or two");
}

} // namespace

const char *quantizePassesName(QuantizePasses passes) {
  switch (passes) {
  case QuantizePasses::Two:
    return "two";
  case QuantizePasses::Cluster:
    return "cluster";
  case QuantizePasses::Pipelined:
    return "pipelined";
  case QuantizePasses::Auto:
    break;
  }
  return "auto";
}

const char *tuneModeName(TuneMode mode) {
  switch (mode) {
  case TuneMode::Off:
    return "off";
  case TuneMode::On:
    return "on";
  case TuneMode::Replay:
    return "replay";
  }
  return "?";
}

llvm::Expected<uint64_t> parseByteSize(llvm::StringRef text) {
  llvm::StringRef rest = text.trim();
  llvm::StringRef digits = rest.take_while([](char c) { return c >= '0' && c <= '9'; });
  llvm::StringRef suffix = rest.drop_front(digits.size()).trim();
  uint64_t value = 0;
  if (digits.empty() || digits.getAsInteger(10, value))
    return llvm::createStringError(std::errc::invalid_argument,
                                   "'%s' is not a byte count (e.g. 1048576, 512M, 10G)", text.str().c_str());
  std::string s = suffix.lower();
  if (llvm::StringRef(s).endswith("ib"))
    s.resize(s.size() - 2);
  else if (s.size() == 2 && s[1] == 'b')
    s.resize(1);
  int shift;
  if (s.empty() || s == "b")
    shift = 0;
  else if (s == "k")
    shift = 10;
  else if (s == "m")
    shift = 20;
  else if (s == "g")
    shift = 30;
  else if (s == "t")
    shift = 40;
  else
    return llvm::createStringError(std::errc::invalid_argument, "'%s' has an unknown size suffix (use K, M, G or T)",
                                   text.str().c_str());
  if (shift > 0 && value > (UINT64_MAX >> shift))
    return llvm::createStringError(std::errc::result_out_of_range, "'%s' is too large", text.str().c_str());
  return value << shift;
}

namespace {

// A directory variable must be absolute: a relative one would name a different folder in every
// working directory of the process (and its children), so it is refused, not resolved.
llvm::Expected<std::optional<std::string>> absoluteDir(const EnvLookup &lookup, llvm::StringRef name) {
  std::optional<std::string> dir = nonEmpty(lookup, name);
  if (dir && (*dir)[0] != '/')
    return badValue(name, *dir, "an absolute path");
  return dir;
}

} // namespace

llvm::Expected<RuntimeConfig> loadConfig(const EnvLookup &lookup) {
  RuntimeConfig config;
  auto user_dir = absoluteDir(lookup, "FA4JIT_CACHE_DIR");
  auto system_dir = absoluteDir(lookup, "FA4JIT_SYSTEM_CACHE_DIR");
  auto repro_dir = absoluteDir(lookup, "FA4JIT_REPRO_DIR");
  for (auto *d : {&user_dir, &system_dir, &repro_dir})
    if (!*d)
      return d->takeError();
  if (auto dir = *user_dir)
    config.cache.user_dir = *dir;
  else if (auto xdg = nonEmpty(lookup, "XDG_CACHE_HOME"))
    config.cache.user_dir = *xdg + "/fa4jit";
  else if (std::string home = homeDirectory(lookup); !home.empty())
    config.cache.user_dir = home + "/.cache/fa4jit";
  if (auto dir = *system_dir)
    config.cache.system_dir = *dir;
  if (auto cap = nonEmpty(lookup, "FA4JIT_CACHE_MAX_BYTES")) {
    llvm::Expected<uint64_t> bytes = parseByteSize(*cap);
    if (!bytes)
      return llvm::createStringError(std::errc::invalid_argument, "FA4JIT_CACHE_MAX_BYTES: %s",
                                     llvm::toString(bytes.takeError()).c_str());
    config.cache.max_bytes = *bytes;
  }
  if (auto disable = nonEmpty(lookup, "FA4JIT_DISABLE_CACHE")) {
    llvm::Expected<bool> off = parseBool("FA4JIT_DISABLE_CACHE", *disable);
    if (!off)
      return off.takeError();
    config.cache.disable_disk = *off;
  }
  if (auto tune = nonEmpty(lookup, "FA4JIT_TUNE")) {
    llvm::Expected<TuneMode> mode = parseTune(*tune);
    if (!mode)
      return mode.takeError();
    config.tune = *mode;
  }
  if (auto level = nonEmpty(lookup, "FA4JIT_LOG_LEVEL")) {
    llvm::Expected<spdlog::level::level_enum> parsed = parseLogLevel(*level);
    if (!parsed)
      return parsed.takeError();
    config.log_level = *parsed;
  }
  if (auto check = nonEmpty(lookup, "FA4JIT_CHECK_FINITE")) {
    llvm::Expected<bool> on = parseBool("FA4JIT_CHECK_FINITE", *check);
    if (!on)
      return on.takeError();
    config.nonfinite = *on ? NonFinitePolicy::Check : NonFinitePolicy::Propagate;
  }
  if (auto passes = nonEmpty(lookup, "FA4JIT_QUANTIZE_PASSES")) {
    llvm::Expected<QuantizePasses> parsed = parseQuantizePasses(*passes);
    if (!parsed)
      return parsed.takeError();
    config.quantize_passes = *parsed;
  }
  if (auto dir = *repro_dir)
    config.repro_dir = *dir;
  else if (!config.cache.user_dir.empty())
    config.repro_dir = config.cache.user_dir + "/repro";
  // Not ours, but NVRTC reads it and it changes the compiled bytes: it must enter every key.
  if (auto flags = nonEmpty(lookup, "NVRTC_APPEND_FLAGS"))
    config.nvrtc_append_flags = *flags;
  return config;
}

llvm::Expected<RuntimeConfig> loadConfig() {
  return loadConfig([](llvm::StringRef name) -> std::optional<std::string> {
    const char *value = std::getenv(name.str().c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
}

} // namespace fa4jit::runtime
