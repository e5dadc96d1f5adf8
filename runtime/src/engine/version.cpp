// The library's version string, stored with tuning results and shown by the CLI.
#include "fa4jit/runtime/engine.h"

namespace fa4jit {
const char *libraryVersion() { return FA4JIT_LIBRARY_VERSION; }
} // namespace fa4jit
