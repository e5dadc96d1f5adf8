// fa4jit: the command-line tool. Each subcommand lives in its own file (cmd_*.cpp) and
// registers itself in the table in subcommands.h.
#include "subcommands.h"

#include "fa4jit/runtime/config.h"
#include "fa4jit/runtime/engine.h"

#include "fa4jit/logging/log.h"

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char **argv) {
  using namespace fa4jit::tools;
  const auto &table = subcommands();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::printf("fa4jit: JIT FP4/FP8 FlashAttention kernels (Direct-P)\n\nusage: fa4jit <command> [options] | fa4jit --version\n\ncommands:\n");
    for (const auto &c : table)
      std::printf("  %-10s %s\n", c.name, c.summary);
    std::printf("\n'fa4jit <command> --help' describes a command.\n");
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("fa4jit %s\n", fa4jit::libraryVersion());
    return 0;
  }
  // FA4JIT_LOG_LEVEL for every command, on stderr (stdout stays parseable with --json); a bad
  // value is the command's own error to report, when it loads the configuration.
  if (llvm::Expected<fa4jit::runtime::RuntimeConfig> config = fa4jit::runtime::loadConfig()) {
    fa4jit::logging::logger().set_level(config->log_level);
  } else {
    llvm::consumeError(config.takeError());
  }
  for (const auto &c : table)
    if (!std::strcmp(argv[1], c.name))
      return c.run(argc - 1, argv + 1);
  std::fprintf(stderr, "fa4jit: unknown command '%s' (try 'fa4jit --help')\n", argv[1]);
  return 2;
}
