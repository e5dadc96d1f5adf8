#pragma once
// Where fa4jit's messages go. By default to stderr, at the level FA4JIT_LOG_LEVEL names (read
// when an Engine or a KernelJit is created; warn when unset); a host that keeps its own log
// installs a callback instead. The library never writes to stdout.
#include <functional>
#include <string>

namespace fa4jit {

enum class LogLevel { Trace, Debug, Info, Warn, Error, Critical, Off };

// Receives each message at or above the level (from any thread; calls are serialized).
using LogCallback = std::function<void(LogLevel level, const std::string &message)>;

// Sends fa4jit's messages to `callback` instead of stderr; an empty callback restores stderr.
void setLogCallback(LogCallback callback);
// The least severe level that is delivered.
void setLogLevel(LogLevel level);
LogLevel logLevel();

} // namespace fa4jit
