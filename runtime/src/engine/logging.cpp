// fa4jit/runtime/logging.h over fa4jit's own spdlog logger (fa4jit/logging/log.h).
#include "fa4jit/runtime/logging.h"

#include "fa4jit/logging/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <mutex>

namespace fa4jit {

namespace {

// spdlog's levels and ours are the same seven, in the same order.
static_assert(int(LogLevel::Trace) == spdlog::level::trace && int(LogLevel::Off) == spdlog::level::off);

class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit CallbackSink(LogCallback callback) : callback_(std::move(callback)) {}

protected:
  void sink_it_(const spdlog::details::log_msg &msg) override {
    callback_(static_cast<LogLevel>(msg.level), std::string(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}

private:
  LogCallback callback_;
};

} // namespace

void setLogCallback(LogCallback callback) {
  spdlog::logger &l = logging::logger();
  spdlog::sink_ptr sink;
  if (callback)
    sink = std::make_shared<CallbackSink>(std::move(callback));
  else
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  l.sinks().assign(1, std::move(sink));
}

void setLogLevel(LogLevel level) { logging::logger().set_level(static_cast<spdlog::level::level_enum>(level)); }

LogLevel logLevel() { return static_cast<LogLevel>(logging::logger().level()); }

} // namespace fa4jit
