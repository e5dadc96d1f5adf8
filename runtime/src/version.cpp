// The library's version string, stored with tuning results and shown by the CLI.
namespace fa4jit {
const char *libraryVersion() { return "0.1.0"; }
} // namespace fa4jit
