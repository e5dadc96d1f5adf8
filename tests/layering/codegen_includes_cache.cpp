// Must not compile: codegen sits below cache.
#include "fa4jit/cache/kernel_cache.h"
