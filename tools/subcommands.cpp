#include "subcommands.h"

namespace fa4jit::tools {

int runAccuracy(int argc, char **argv);
int runBench(int argc, char **argv);
int runCompile(int argc, char **argv);
int runJitBench(int argc, char **argv);
int runRun(int argc, char **argv);
int runCache(int argc, char **argv);
int runEmit(int argc, char **argv);
int runTmem(int argc, char **argv);
int runTune(int argc, char **argv);

const std::vector<Subcommand> &subcommands() {
  static const std::vector<Subcommand> table = {
      {"run", "generate, compile, cache and run one attention (the README's main job)", runRun},
      {"bench", "TFLOP/s of every route over a shape grid (GPU)", runBench},
      {"compile", "pre-compile kernels into the cache or a system bundle", runCompile},
      {"jit-bench", "JIT costs: cold compile, disk hit in a new process, memory hit, quantizer bandwidth", runJitBench},
      {"accuracy", "accuracy of every route and classifier against FP64 and BF16 (CPU models)", runAccuracy},
      {"cache", "inspect, verify, prune or clear the kernel cache", runCache},
      {"emit", "print the generated source (or canonical spec) of one kernel", runEmit},
      {"tmem", "print and draw the sm_100a tensor-memory column plan of a shape", runTmem},
      {"tune", "autotune shapes into the tuning database, or --show it", runTune},
  };
  return table;
}

} // namespace fa4jit::tools
