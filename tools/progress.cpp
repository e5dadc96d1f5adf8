#include "progress.h"

#include <cstdio>
#include <unistd.h>

namespace fa4jit::tools {

ProgressLine::ProgressLine(bool enabled) : on_(enabled && ::isatty(STDERR_FILENO)) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const char *what, std::size_t done, std::size_t total, const std::string &detail) {
  if (!on_)
    return;
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = total ? kWidth * (done < total ? done : total) / total : kWidth;
  std::fprintf(stderr, "\r  [%s%s] %-10s %3zu/%-3zu %s\033[K", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), what, done, total, detail.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  if (!on_ || !drawn_)
    return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

} // namespace fa4jit::tools
