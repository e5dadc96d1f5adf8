#include "fa4jit/cache/cache_json.h"

namespace fa4jit::cache {
namespace {

// llvm::json holds signed 64-bit integers; byte counts beyond 2^63 do not occur.
int64_t n(uint64_t v) { return int64_t(v); }

} // namespace

llvm::json::Value toJSON(const EntryInfo &info) {
  llvm::json::Array files;
  for (const ManifestFile &f : info.files)
    files.push_back(llvm::json::Object{{"name", f.name}, {"size", n(f.size)}, {"sha256", f.sha256}});
  llvm::json::Object parts;
  for (const auto &[name, value] : info.key_parts)
    parts[name] = value;
  llvm::json::Object out{{"key", info.key},
                         {"layer", layerName(info.layer)},
                         {"bytes", n(info.bytes)},
                         {"created_unix", info.created_unix_seconds},
                         {"last_use_unix", info.last_use_unix_seconds},
                         {"fa4jit_version", info.writer_version},
                         {"files", std::move(files)},
                         {"key_parts", std::move(parts)}};
  if (!info.problem.empty())
    out["problem"] = info.problem;
  return out;
}

llvm::json::Value toJSON(const std::vector<EntryInfo> &entries) {
  llvm::json::Array out;
  for (const EntryInfo &e : entries)
    out.push_back(toJSON(e));
  return out;
}

llvm::json::Value toJSON(const LayerStats &stats) {
  llvm::json::Object out{{"dir", stats.dir},
                         {"available", stats.available},
                         {"entries", n(stats.entries)},
                         {"bytes", n(stats.bytes)},
                         {"temp_dirs", n(stats.temp_dirs)}};
  if (!stats.unavailable_reason.empty())
    out["unavailable_reason"] = stats.unavailable_reason;
  return out;
}

llvm::json::Value toJSON(const CacheStats &stats) {
  const CacheCounters &c = stats.counters;
  llvm::json::Object out{{"mode", stats.mode},
                         {"writes_stopped_reason", stats.writes_stopped_reason.empty()
                                                       ? llvm::json::Value(nullptr)
                                                       : llvm::json::Value(stats.writes_stopped_reason)},
                         {"max_bytes", n(stats.max_bytes)},
                         {"user", toJSON(stats.user)},
                         {"system", toJSON(stats.system)},
                         {"memory", llvm::json::Object{{"entries", n(stats.memory_entries)}, {"bytes", n(stats.memory_bytes)}}},
                         {"counters", llvm::json::Object{{"memory_hits", n(c.memory_hits)},
                                                         {"system_hits", n(c.system_hits)},
                                                         {"user_hits", n(c.user_hits)},
                                                         {"misses", n(c.misses)},
                                                         {"produced", n(c.produced)},
                                                         {"corrupt_removed", n(c.corrupt_removed)}}}};
  if (!stats.degraded_reason.empty())
    out["degraded_reason"] = stats.degraded_reason;
  return out;
}

llvm::json::Value toJSON(const VerifyReport &report) {
  llvm::json::Array bad;
  for (const VerifyIssue &i : report.bad)
    bad.push_back(llvm::json::Object{
        {"key", i.key}, {"layer", layerName(i.layer)}, {"problem", i.problem}, {"removed", i.removed}});
  return llvm::json::Object{{"checked", n(report.checked)}, {"ok", report.bad.empty()}, {"bad", std::move(bad)}};
}

llvm::json::Value toJSON(const PruneReport &r) {
  return llvm::json::Object{{"entries_before", n(r.entries_before)},   {"bytes_before", n(r.bytes_before)},
                            {"entries_removed", n(r.entries_removed)}, {"bytes_removed", n(r.bytes_removed)},
                            {"entries_after", n(r.entries_after)},     {"bytes_after", n(r.bytes_after)},
                            {"temp_dirs_removed", n(r.temp_dirs_removed)}, {"skipped_busy", n(r.skipped_busy)}};
}

} // namespace fa4jit::cache
