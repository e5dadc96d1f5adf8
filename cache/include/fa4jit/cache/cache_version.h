#pragma once
// Versions recorded in every cache entry: the on-disk schema (part of every key) and the
// fa4jit build that wrote the entry (informational, shown by `fa4jit cache ls`).
namespace fa4jit::cache {

int schemaVersion();
const char *writerVersion();

} // namespace fa4jit::cache
