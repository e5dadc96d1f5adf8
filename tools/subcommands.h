#pragma once
// The table of fa4jit subcommands. Each cmd_<name>.cpp defines one run function.
#include <vector>

namespace fa4jit::tools {

struct Subcommand {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); // argv[0] is the subcommand name
};

const std::vector<Subcommand> &subcommands();

} // namespace fa4jit::tools
