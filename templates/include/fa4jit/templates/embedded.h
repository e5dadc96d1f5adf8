#pragma once
// The device headers under templates/fa4jit, embedded at build time. NVRTC receives them as
// in-memory headers, and their bytes enter every cache key.
#include <cstddef>

namespace fa4jit::templates {

struct EmbeddedHeader {
  const char *name;     // include name, e.g. "fa4jit/formats.cuh"
  const char *contents; // NUL-terminated source text
  std::size_t size;     // bytes, without the terminating NUL
};

// All embedded headers, sorted by name.
const EmbeddedHeader *embeddedHeaders(std::size_t *count);

} // namespace fa4jit::templates
