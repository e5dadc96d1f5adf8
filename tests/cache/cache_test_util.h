#pragma once
// Helpers shared by the cache tests: scratch directories, sample keys and entries, raw file
// access for damaging entries, and a counter of spdlog warnings.
#include "fa4jit/cache/cache_key.h"
#include "fa4jit/cache/kernel_cache.h"

#include "llvm/Support/FileSystem.h"

#include <spdlog/sinks/base_sink.h>
#include "fa4jit/logging/log.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>

namespace fa4jit::cache::test {

class ScratchDir {
public:
  ScratchDir() {
    std::string pattern = "/tmp/fa4jit-cache-test.XXXXXX";
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~ScratchDir() { llvm::sys::fs::remove_directories(path_); }
  const std::string &path() const { return path_; }
  std::string sub(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline CacheKey sampleKey(const std::string &name) {
  return CacheKeyBuilder()
      .source("// kernel " + name + "\n__global__ void k() {}\n")
      .target("sm_100a")
      .part("kernel", "fa4jit_test_" + name)
      .nvrtcVersion(13, 0, "test")
      .options({"-std=c++17", "-arch", "sm_100a"})
      .build();
}

inline EntryFiles sampleFiles(const std::string &name, size_t cubinBytes = 1000) {
  std::string cubin(cubinBytes, '\0');
  for (size_t i = 0; i < cubinBytes; ++i)
    cubin[i] = char((i * 131 + name.size()) & 0xff);
  return {{"kernel.cubin", cubin}, {"kernel.cu", "// kernel " + name + "\n"}, {"spec.json", "{\"name\":\"" + name + "\"}"}};
}

inline CacheConfig userConfig(const std::string &dir) {
  CacheConfig c;
  c.user_dir = dir;
  return c;
}

inline std::string entryPath(const std::string &root, const std::string &key) {
  return root + "/" + key.substr(0, 2) + "/" + key;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

inline void flipByte(const std::string &path, size_t offset) {
  std::string data = readFile(path);
  data.at(offset) = char(data.at(offset) ^ 0x01);
  writeFile(path, data);
}

inline unsigned modeOf(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? unsigned(st.st_mode & 07777) : 0xffffu;
}

// Counts warnings sent to fa4jit's logger while it is alive.
class WarningCounter {
public:
  WarningCounter() : sink_(std::make_shared<Sink>()) { fa4jit::logging::logger().sinks().push_back(sink_); }
  ~WarningCounter() {
    auto &sinks = fa4jit::logging::logger().sinks();
    for (auto it = sinks.begin(); it != sinks.end(); ++it)
      if (*it == sink_) {
        sinks.erase(it);
        break;
      }
  }
  int warnings() const { return sink_->warnings.load(); }
  std::string last() const {
    std::lock_guard<std::mutex> lock(sink_->textMutex);
    return sink_->lastText;
  }

private:
  struct Sink : spdlog::sinks::base_sink<std::mutex> {
    std::atomic<int> warnings{0};
    mutable std::mutex textMutex;
    std::string lastText;
    void sink_it_(const spdlog::details::log_msg &msg) override {
      if (msg.level == spdlog::level::warn) {
        ++warnings;
        std::lock_guard<std::mutex> lock(textMutex);
        lastText.assign(msg.payload.data(), msg.payload.size());
      }
    }
    void flush_() override {}
  };
  std::shared_ptr<Sink> sink_;
};

} // namespace fa4jit::cache::test
