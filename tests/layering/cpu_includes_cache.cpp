// Must not compile: the CPU models depend on codegen only.
#include "fa4jit/cache/kernel_cache.h"
