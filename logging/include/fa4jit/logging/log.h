#pragma once
// fa4jit's own logger. Every library message goes through it: to stderr unless the host installs
// a callback (fa4jit/runtime/logging.h), never to stdout and never through spdlog's default
// logger, which belongs to the host process. It is not registered with spdlog by name, so a host
// that uses spdlog itself sees no "fa4jit" logger appear or clash in its registry.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace fa4jit::logging {

inline spdlog::logger &logger() {
  static const std::shared_ptr<spdlog::logger> instance = [] {
    auto l = std::make_shared<spdlog::logger>("fa4jit", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_level(spdlog::level::warn); // (FA4JIT_LOG_LEVEL, read by runtime/config, overrides it)
    return l;
  }();
  return *instance;
}

} // namespace fa4jit::logging
