// fa4jit cache ls|stat|verify|prune|clear: inspect and maintain the kernel cache.
#include "cli_flags.h"
#include "subcommands.h"

#include "fa4jit/cache/cache_json.h"
#include "fa4jit/cache/kernel_cache.h"
#include "fa4jit/runtime/config.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "fa4jit/logging/log.h"

#include <ctime>
#include <optional>
#include <string>

namespace fa4jit::tools {
namespace {

using namespace fa4jit::cache;

struct CacheArgs {
  std::string op;
  bool json = false;
  bool help = false;
  bool fix = false;
  std::optional<uint64_t> max_bytes;
};

const char *kUsage = "usage: fa4jit cache <ls|stat|verify|prune|clear> [--json] [--help]\n"
                     "\n"
                     "  ls       list entries (system layer, then user layer)\n"
                     "  stat     directories, sizes, cap and mode (disk, memory or disabled)\n"
                     "  verify   check every entry's manifest and file hashes; exits 1 if one is bad\n"
                     "  prune    evict least recently used user entries down to the cap, remove leftovers\n"
                     "  clear    remove every user entry\n"
                     "\n"
                     "The directories come from FA4JIT_CACHE_DIR, FA4JIT_SYSTEM_CACHE_DIR and\n"
                     "FA4JIT_CACHE_MAX_BYTES.\n";

const char *opUsage(llvm::StringRef op) {
  if (op == "ls")
    return "usage: fa4jit cache ls [--json]\n  Lists entries: key, layer, size, last use, target, kernel name.\n";
  if (op == "stat")
    return "usage: fa4jit cache stat [--json]\n  Shows the cache directories, their sizes, the cap and the mode.\n";
  if (op == "verify")
    return "usage: fa4jit cache verify [--json] [--fix]\n"
           "  Checks every entry's manifest and file hashes; exits 1 if any entry is bad.\n"
           "  --fix  removes bad user entries (they are recompiled on next use).\n";
  if (op == "prune")
    return "usage: fa4jit cache prune [--json] [--max-bytes N]\n"
           "  Removes leftovers of killed writers, then least recently used user entries until at\n"
           "  most N bytes remain (default: FA4JIT_CACHE_MAX_BYTES). N takes K, M, G, T suffixes.\n";
  if (op == "clear")
    return "usage: fa4jit cache clear [--json]\n  Removes every user entry. The system layer is never touched.\n";
  return nullptr;
}

std::string humanBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? std::to_string(bytes) + " B" : llvm::formatv("{0:f1} {1}", v, units[u]).str();
}

std::string isoTime(int64_t unixSeconds) {
  std::time_t t = std::time_t(unixSeconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string partOf(const EntryInfo &e, llvm::StringRef name) {
  for (const auto &[k, v] : e.key_parts)
    if (k == name)
      return v;
  return "-";
}

void printJSON(llvm::json::Value value) { llvm::outs() << llvm::formatv("{0:2}", value) << "\n"; }

int runLs(KernelCache &cache, const CacheArgs &args) {
  std::vector<EntryInfo> entries = cache.list();
  if (args.json) {
    printJSON(toJSON(entries));
    return 0;
  }
  llvm::outs() << llvm::formatv("{0,-18} {1,-6} {2,10} {3,-20} {4,-8} {5}\n", "KEY", "LAYER", "SIZE", "LAST USE",
                                "TARGET", "KERNEL");
  for (const EntryInfo &e : entries)
    llvm::outs() << llvm::formatv("{0,-18} {1,-6} {2,10} {3,-20} {4,-8} {5}{6}\n", e.key.substr(0, 16),
                                  layerName(e.layer), humanBytes(e.bytes), isoTime(e.last_use_unix_seconds),
                                  partOf(e, "target"), partOf(e, "kernel"),
                                  e.problem.empty() ? "" : "  (unreadable: " + e.problem + ")");
  llvm::outs() << entries.size() << " entries\n";
  return 0;
}

void printLayer(llvm::StringRef title, const LayerStats &layer) {
  llvm::outs() << llvm::formatv("{0,-8} {1}\n", title, layer.dir.empty() ? "(none)" : layer.dir);
  if (layer.available)
    llvm::outs() << llvm::formatv("         {0} entries, {1}{2}\n", std::to_string(layer.entries), humanBytes(layer.bytes),
                                  layer.temp_dirs ? ", " + std::to_string(layer.temp_dirs) + " temporary dirs" : "");
  else if (!layer.unavailable_reason.empty())
    llvm::outs() << "         not used: " << layer.unavailable_reason << "\n";
}

int runStat(KernelCache &cache, const CacheArgs &args) {
  CacheStats st = cache.stat();
  if (args.json) {
    printJSON(toJSON(st));
    return 0;
  }
  llvm::outs() << "mode     " << st.mode << "\n";
  if (!st.writes_stopped_reason.empty())
    llvm::outs() << "writes   stopped (entries still read): " << st.writes_stopped_reason << "\n";
  printLayer("user", st.user);
  printLayer("system", st.system);
  llvm::outs() << "cap      " << humanBytes(st.max_bytes) << "\n";
  return 0;
}

int runVerify(KernelCache &cache, const CacheArgs &args) {
  VerifyOptions options;
  options.remove_bad = args.fix;
  VerifyReport report = cache.verify(options);
  if (args.json) {
    printJSON(toJSON(report));
  } else {
    for (const VerifyIssue &i : report.bad)
      llvm::outs() << llvm::formatv("BAD {0} ({1}): {2}{3}\n", i.key, layerName(i.layer), i.problem,
                                    i.removed ? " [removed]" : "");
    llvm::outs() << llvm::formatv("checked {0} entries, {1} bad\n", std::to_string(report.checked), std::to_string(report.bad.size()));
  }
  return report.bad.empty() ? 0 : 1;
}

void printPrune(const PruneReport &r) {
  llvm::outs() << llvm::formatv("removed {0} entries ({1}) and {2} leftover temporary dirs; {3} entries ({4}) remain",
                                std::to_string(r.entries_removed), humanBytes(r.bytes_removed),
                                std::to_string(r.temp_dirs_removed), std::to_string(r.entries_after),
                                humanBytes(r.bytes_after));
  if (r.skipped_busy)
    llvm::outs() << "; " + std::to_string(r.skipped_busy) + " skipped (in use by another process)";
  llvm::outs() << "\n";
}

int runPrune(KernelCache &cache, const CacheArgs &args, uint64_t configuredCap) {
  PruneReport r = cache.prune(PruneOptions{args.max_bytes.value_or(configuredCap)});
  args.json ? printJSON(toJSON(r)) : printPrune(r);
  return 0;
}

int runClear(KernelCache &cache, const CacheArgs &args) {
  PruneReport r = cache.clear();
  args.json ? printJSON(toJSON(r)) : printPrune(r);
  return r.skipped_busy ? 1 : 0;
}

// Returns an error message, or empty.
std::string parseArgs(int argc, char **argv, CacheArgs &args) {
  CliFlags flags({shared_flags::json(), {"fix", FlagValue::None}, {"max-bytes"}}, /*command_words=*/1);
  if (auto e = flags.parse(argc, argv))
    return llvm::toString(std::move(e));
  args.help = flags.help();
  args.json = flags.has("json");
  if (!flags.words().empty()) {
    args.op = flags.words().front();
    if (!opUsage(args.op))
      return "unknown cache command '" + args.op + "'";
  }
  if (flags.has("fix") && args.op != "verify")
    return "--fix is an option of 'cache verify'";
  args.fix = flags.has("fix");
  if (flags.has("max-bytes")) {
    if (args.op != "prune")
      return "--max-bytes is an option of 'cache prune'";
    llvm::Expected<uint64_t> bytes = runtime::parseByteSize(flags.str("max-bytes", ""));
    if (!bytes)
      return "--max-bytes: " + llvm::toString(bytes.takeError());
    args.max_bytes = *bytes;
  }
  return "";
}

} // namespace

int runCache(int argc, char **argv) {
  CacheArgs args;
  if (std::string error = parseArgs(argc, argv, args); !error.empty()) {
    llvm::errs() << "fa4jit cache: " << error << "\n\n" << kUsage;
    return 2;
  }
  if (args.op.empty()) {
    (args.help ? llvm::outs() : llvm::errs()) << kUsage;
    return args.help ? 0 : 2;
  }
  if (args.help) {
    llvm::outs() << opUsage(args.op);
    return 0;
  }
  llvm::Expected<runtime::RuntimeConfig> config = runtime::loadConfig();
  if (!config) {
    llvm::errs() << "fa4jit cache: " << llvm::toString(config.takeError()) << "\n";
    return 2;
  }
  // Diagnostics go to stderr (fa4jit's logger), so that stdout stays parseable with --json.
  logging::logger().set_level(config->log_level);
  std::unique_ptr<KernelCache> cache = KernelCache::open(config->cache);
  // stat reports a missing user layer; the others would silently act on nothing.
  if (args.op != "stat" && !cache->hasUserLayer()) {
    llvm::errs() << "fa4jit cache: no usable cache directory: "
                 << (config->cache.disable_disk ? "FA4JIT_DISABLE_CACHE is set" : cache->degradedReason()) << "\n";
    return 1;
  }
  if (args.op == "ls")
    return runLs(*cache, args);
  if (args.op == "stat")
    return runStat(*cache, args);
  if (args.op == "verify")
    return runVerify(*cache, args);
  if (args.op == "prune")
    return runPrune(*cache, args, config->cache.max_bytes);
  return runClear(*cache, args);
}

} // namespace fa4jit::tools
