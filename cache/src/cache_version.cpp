// Version of the on-disk layout of the kernel cache and the tuning database. Bumped whenever an
// entry written by an older build could be misread by a newer one; it enters every cache key.
#include "fa4jit/cache/cache_version.h"

namespace fa4jit::cache {
int schemaVersion() { return 1; }
const char *writerVersion() { return FA4JIT_CACHE_WRITER_VERSION; }
} // namespace fa4jit::cache
