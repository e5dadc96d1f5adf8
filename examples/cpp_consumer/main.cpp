// Opens an fa4jit engine through the installed C++ API and reports what it found: the library's
// version, then the engine's workspace on the GPU, or why there is no engine (no GPU, no driver),
// and that a call with bad arguments comes back as a Status naming what is wrong. Exit status 0
// either way; 1 only if the library misbehaves (an error without a message).
#include <fa4jit/runtime/fa4jit.hpp>

#include <cstdio>

int main() {
  std::printf("fa4jit %s\n", fa4jit::api::version().c_str());
  fa4jit::api::Result<fa4jit::api::Engine> engine = fa4jit::api::Engine::create(0);
  if (!engine.ok()) {
    std::printf("no engine: %s\n", engine.status().message().c_str());
    return engine.status().message().empty() ? 1 : 0;
  }
  fa4jit::api::Result<uint64_t> bytes = engine.value().workspaceBytes();
  if (!bytes.ok())
    return 1;
  std::printf("engine on device 0, workspace %llu bytes\n", static_cast<unsigned long long>(bytes.value()));
  fa4jit::api::ForwardArgs bad; // (no tensors: refused before any launch)
  const fa4jit::api::Status s = engine.value().forward(bad);
  std::printf("a forward without tensors: %s\n", s.message().c_str());
  return s.ok() || s.message().empty() ? 1 : 0;
}
