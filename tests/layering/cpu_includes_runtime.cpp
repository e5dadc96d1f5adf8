// Must not compile: the CPU models sit below runtime (and need no CUDA).
#include "fa4jit/runtime/engine.h"
