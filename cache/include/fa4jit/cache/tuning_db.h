#pragma once
// The tuning database (docs/ARCHITECTURE.md §8): which attention spec won for a shape on a device, with every
// candidate's timing, beside the kernel cache:
//   <system cache dir>/tuning/<device-slug>.json   read only, shipped with a deployment, searched first
//   <user cache dir>/tuning/<device-slug>.json     written by the tuner
// An attention record is keyed by (family, target, route, head dim, causal, sequence-length
// bucket), a decode plan's by (target, V format, head dim, page size, grid bucket, context
// bucket); every record carries the identity it was measured under (driver, NVRTC, fa4jit version); a record whose
// identity differs from this process's is skipped, never trusted (FlashInfer skips on any
// mismatch). Writes lock the file, re-read it, merge and publish atomically (temp + fsync +
// rename), so several processes tuning at once lose nothing. A bad record is ignored, named in one
// warning per path and process, and kept in the file; a file that cannot be read as a whole (bad
// JSON, wrong shape) is ignored with one warning, and the next store moves it aside to
// <file>.corrupt-<unix time> before writing a new one. A file of another schema version is skipped.
// Directories follow the kernel cache's rules: one that group or others may write is refused (the
// user's must also be the user's own), and a tuning file must be a regular file, not a symbolic
// link, owned by root or this user and writable by nobody else.
#include "fa4jit/codegen/spec.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fa4jit::cache {

inline constexpr int kTuningSchemaVersion = 1;
inline constexpr const char *kTuningDirName = "tuning";

// What a measurement depends on besides its key.
struct TuningIdentity {
  std::string device_name; // "NVIDIA H200"
  int sm_count = 0;
  std::string driver;         // "13.0"
  std::string nvrtc;          // NVRTC version and build (the kernel cache's identity)
  std::string fa4jit_version; // the library that measured
};
// File name stem of a device: lowercase alphanumerics and '-', then the SM count
// ("nvidia-h200-132sm"), so differently cut parts of one name get different files.
std::string deviceSlug(llvm::StringRef device_name, int sm_count);

struct TuningKey {
  KernelFamily family = KernelFamily::AttentionForward;
  Target target = Target::Sm90a;
  Route route = Route::DirectP;
  int head_dim = 128;
  bool causal = false;
  int seqlen_bucket = 1; // codegen seqlenBucket(seqlen_k); decode: of the longest sequence
  // Decode plans (family PagedKv; route and causal unused): the cache's page size and V format,
  // and decodeCtaBucket of the grid without splits (sequences x kv heads x row blocks).
  int page_size = 0;
  KvValueFormat value_format = KvValueFormat::Fp8;
  int cta_bucket = 0;
  // Route "auto" (family AttentionForward, route unused): the record chose a route preset for an
  // accuracy budget, the minimum cosine and the logit standard deviation it was predicted at.
  bool route_auto = false;
  double min_cosine = 0, logit_std = 0;
  // "attention/sm_90a/directp/d128/c0/s4096", "paged-kv/sm_90a/fp8/d128/p16/g64/s32768",
  // "attention/sm_90a/auto/d128/c0/s4096/cos0.98/lstd16": stable, used as the JSON map key.
  std::string str() const;
  bool operator<(const TuningKey &o) const { return str() < o.str(); }
  bool operator==(const TuningKey &o) const { return str() == o.str(); }
};

// A budget value as keys spell it: the shortest text that reads back as the same double ("0.98").
std::string budgetText(double v);

struct CandidateResult {
  KernelSpec spec;
  std::string label;
  bool ok = false;   // compiled, launched and timed; else `error` says why (infinitely slow)
  double median_ms = std::numeric_limits<double>::infinity();
  double min_ms = std::numeric_limits<double>::infinity();
  double max_ms = std::numeric_limits<double>::infinity();
  int reps = 0;
  double noise = 0;  // relative spread of the repeats (the timing source's measure)
  std::string error;
  std::optional<double> cosine; // against FP64, when accuracy was measured
  int splits = 0; // decode plans: key splits per sequence (1 .. kMaxDecodeSplits); 0 otherwise
};

struct PrunedCandidate {
  std::string label;
  std::string reason;
};

struct TuningRecord {
  TuningKey key;
  TuningIdentity identity;
  int winner = -1;    // index into candidates
  int heuristic = -1; // index of the heuristic's spec (0 when it was enumerated)
  std::vector<CandidateResult> candidates;
  std::vector<PrunedCandidate> pruned;
  double tie_band = 0;       // relative band used for the winner
  double min_cosine = 0;     // accuracy floor (0: none)
  std::string accuracy_source; // e.g. "cpu-model s1024 r32" or "calibration file.json"
  std::string timing_source;   // e.g. "cuda-events warmup 5 reps 20 cold-l2 rotate 2"
  std::string problem;         // the shape timed, e.g. "b8 hq16 hkv16 sq4096 sk4096"
  std::string tuned_at;        // UTC, ISO 8601

  const CandidateResult &winnerResult() const { return candidates.at(size_t(winner)); }
};

enum class TuningLayer { System, User, Memory };
const char *toString(TuningLayer layer);

// A record the reader cannot use: why, and its JSON as read, which the next store writes back
// unchanged (a rejected record is never dropped; tuning that key again replaces it).
struct RejectedRecord {
  std::string reason;
  std::string json;
};

struct TuningFile {
  int schema = kTuningSchemaVersion;
  std::string device_name;
  int sm_count = 0;
  std::map<std::string, TuningRecord> records;    // by TuningKey::str()
  std::map<std::string, RejectedRecord> rejected; // by the key it was filed under
};

// Serialization (stable key order, a checksum over the whole content and one per record).
// parseTuningFile's errors say what is wrong and where; a file of another schema is an error
// starting "schema". A record is rejected, alone, when it does not parse, when its specs fail
// validation or do not match its key, or when the file's checksum fails and the record's own
// does too (a damaged or hand-edited record; the intact ones are kept).
std::string serializeTuningFile(const TuningFile &file);
llvm::Expected<TuningFile> parseTuningFile(llvm::StringRef text, llvm::StringRef path);
// True when the error from parseTuningFile was a schema-version mismatch (skip, do not warn).
bool isSchemaMismatch(const llvm::Error &error);

struct TuningDbConfig {
  std::string user_dir;   // the user's tuning directory; empty: records live in memory only
  std::string system_dir; // read-only directory searched first; empty: none
  bool match_driver = true; // skip records measured under another driver version
};

// One record as listed by `fa4jit tune --show`.
struct ListedRecord {
  TuningRecord record;
  TuningLayer layer = TuningLayer::User;
  std::string path;
  bool current = false; // identity matches this process (lookup would use it)
};

class TuningDb {
public:
  TuningDb(TuningDbConfig config, TuningIdentity identity);
  ~TuningDb();
  TuningDb(const TuningDb &) = delete;
  TuningDb &operator=(const TuningDb &) = delete;

  // The record for `key` measured under this identity: system layer, then user, then memory.
  // Files are read on first use and kept; reload() re-reads them.
  std::optional<TuningRecord> lookup(const TuningKey &key, TuningLayer *layer = nullptr) const;
  // The winner's spec alone (what every forward call asks; no copy of the candidate list).
  std::optional<KernelSpec> winnerSpec(const TuningKey &key) const;
  // A decode key's winning plan: its spec and splits.
  struct DecodeWinner {
    KernelSpec spec;
    int splits = 1;
  };
  std::optional<DecodeWinner> winnerDecode(const TuningKey &key) const;
  // Stores (or replaces) the record of record.key: under the file lock, re-read, merge, write to
  // a temporary file, fsync, rename, fsync the directory. Without a user directory the record is
  // kept in memory. The record's identity is set to this database's.
  llvm::Error store(TuningRecord record);
  void reload();

  // Every record of this device in the system and user files (and memory), current or not.
  std::vector<ListedRecord> list() const;

  const TuningIdentity &identity() const { return identity_; }
  const TuningDbConfig &config() const { return config_; }
  std::string userFile() const;   // empty without a user directory
  std::string systemFile() const; // empty without a system directory

private:
  struct Layer;
  void ensureLoaded() const;
  const TuningRecord *findLocked(const std::string &key, TuningLayer *layer) const;
  bool current(const TuningRecord &r) const;

  TuningDbConfig config_;
  TuningIdentity identity_;
  mutable std::mutex mutex_;
  mutable bool loaded_ = false;
  mutable std::unique_ptr<TuningFile> system_, user_;
  std::map<std::string, TuningRecord> memory_;
};

// Reads one tuning file for inspection. nullopt when it does not exist; a corrupt or untrusted
// file warns once (as lookups do), yields nullopt and, with `problem`, says why.
std::optional<TuningFile> readTuningFile(const std::string &path, std::string *problem = nullptr);
// Every "*.json" tuning file in a directory (sorted).
std::vector<std::string> tuningFilesIn(const std::string &dir);

} // namespace fa4jit::cache
