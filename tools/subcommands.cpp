#include "subcommands.h"

namespace fa4jit::tools {

int runAccuracy(int argc, char **argv);
int runCache(int argc, char **argv);
int runTmem(int argc, char **argv);

const std::vector<Subcommand> &subcommands() {
  static const std::vector<Subcommand> table = {
      {"accuracy", "accuracy of every route and classifier against FP64 and BF16 (CPU models)", runAccuracy},
      {"cache", "inspect, verify, prune or clear the kernel cache", runCache},
      {"tmem", "print and draw the sm_100a tensor-memory column plan of a shape", runTmem},
  };
  return table;
}

} // namespace fa4jit::tools
