// The library's version string, stored with tuning results and shown by the CLI.
namespace fa4jit {
const char *libraryVersion() { return FA4JIT_LIBRARY_VERSION; }
} // namespace fa4jit
