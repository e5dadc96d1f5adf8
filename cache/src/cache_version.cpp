// Version of the on-disk layout of the kernel cache and the tuning database. Bumped whenever an
// entry written by an older build could be misread by a newer one; it enters every cache key.
namespace fa4jit::cache {
int schemaVersion() { return 1; }
} // namespace fa4jit::cache
