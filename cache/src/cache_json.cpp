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
  for (const auto &[name, value] : info.keyParts)
    parts[name] = value;
  llvm::json::Object out{{"key", info.key},
                         {"layer", layerName(info.layer)},
                         {"bytes", n(info.bytes)},
                         {"created_unix", info.createdUnixSeconds},
                         {"last_use_unix", info.lastUseUnixSeconds},
                         {"fa4jit_version", info.writerVersion},
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
                         {"temp_dirs", n(stats.tempDirs)}};
  if (!stats.unavailableReason.empty())
    out["unavailable_reason"] = stats.unavailableReason;
  return out;
}

llvm::json::Value toJSON(const CacheStats &stats) {
  const CacheCounters &c = stats.counters;
  llvm::json::Object out{{"mode", stats.mode},
                         {"max_bytes", n(stats.maxBytes)},
                         {"user", toJSON(stats.user)},
                         {"system", toJSON(stats.system)},
                         {"memory", llvm::json::Object{{"entries", n(stats.memoryEntries)}, {"bytes", n(stats.memoryBytes)}}},
                         {"counters", llvm::json::Object{{"memory_hits", n(c.memoryHits)},
                                                         {"system_hits", n(c.systemHits)},
                                                         {"user_hits", n(c.userHits)},
                                                         {"misses", n(c.misses)},
                                                         {"produced", n(c.produced)},
                                                         {"corrupt_removed", n(c.corruptRemoved)}}}};
  if (!stats.degradedReason.empty())
    out["degraded_reason"] = stats.degradedReason;
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
  return llvm::json::Object{{"entries_before", n(r.entriesBefore)},   {"bytes_before", n(r.bytesBefore)},
                            {"entries_removed", n(r.entriesRemoved)}, {"bytes_removed", n(r.bytesRemoved)},
                            {"entries_after", n(r.entriesAfter)},     {"bytes_after", n(r.bytesAfter)},
                            {"temp_dirs_removed", n(r.tempDirsRemoved)}, {"skipped_busy", n(r.skippedBusy)}};
}

} // namespace fa4jit::cache
