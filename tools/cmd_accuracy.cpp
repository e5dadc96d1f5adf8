#include "subcommands.h"
#include <cstdio>
namespace fa4jit::tools {
int runAccuracy(int, char **) {
  std::fprintf(stderr, "fa4jit accuracy: not built yet\n");
  return 1;
}
} // namespace fa4jit::tools
