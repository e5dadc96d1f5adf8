#pragma once
// The one progress line of the CLI (compile, tune, accuracy): redrawn in place on stderr, and only
// when stderr is a terminal, so logs and pipes get none of it.
#include <cstddef>
#include <string>

namespace fa4jit::tools {

class ProgressLine {
public:
  // `enabled`: the command wants progress (for example not with --json or --no-progress).
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  // "  [#####.....] <what> done/total <detail>"
  void update(const char *what, std::size_t done, std::size_t total, const std::string &detail = "");
  // Clears the line (also done by the destructor), so what follows starts on a clean line.
  void clear();

private:
  bool on_;
  bool drawn_ = false;
};

} // namespace fa4jit::tools
