// The tuning database's layers, locking and atomic publish (tuning_db.h).
#include "fa4jit/cache/tuning_db.h"

#include "fs_util.h"
#include "key_lock.h"

#include "fa4jit/logging/log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <set>
#include <unistd.h>

namespace fa4jit::cache {
namespace {

// A tuning file is small (tens of KiB per shape); anything much larger is not ours.
constexpr uint64_t kMaxTuningFileBytes = uint64_t(64) << 20;

// One warning per damaged file and process, however many databases or lookups read it.
void warnOnce(const std::string &path, const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(path).second)
    logging::logger().warn("{}", message);
}

void warnCorruptOnce(const std::string &path, const std::string &why) {
  warnOnce(path, fmt::format("fa4jit tuning: ignoring corrupt tuning database {} ({}); its shapes fall back to the "
                             "heuristic until they are tuned again",
                             path, why));
}

std::string describeRejected(const TuningFile &f) {
  std::string out;
  for (const auto &[k, r] : f.rejected)
    out += (out.empty() ? "" : "; ") + k + ": " + r.reason;
  return out;
}

enum class ReadStatus { Missing, Ok, Skipped, Corrupt };

// Reads and parses a file of the layer whose folder is `dir` (owned by this user when `ours`). A
// corrupt or untrusted file warns once; another schema is skipped quietly (debug); rejected
// records are named in one warning and the rest is Ok. `problem` receives what was wrong.
ReadStatus readFile(const std::string &dir, bool ours, const std::string &path, TuningFile &out,
                    std::string *problem = nullptr) {
  if (!pathExists(path))
    return ReadStatus::Missing;
  auto fail = [&](std::string why, ReadStatus status) {
    warnCorruptOnce(path, why);
    if (problem)
      *problem = std::move(why);
    return status;
  };
  // The kernel cache's folder rule: a tuning file others may replace picks the kernels we run.
  if (llvm::Error e = checkPrivateDirectory(dir, ours))
    return fail(llvm::toString(std::move(e)), ReadStatus::Skipped);
  auto text = readTrustedFile(path, kMaxTuningFileBytes);
  if (!text)
    return fail(llvm::toString(text.takeError()), ReadStatus::Skipped);
  auto parsed = parseTuningFile(*text, path);
  if (!parsed) {
    llvm::Error e = parsed.takeError();
    if (isSchemaMismatch(e)) {
      logging::logger().debug("fa4jit tuning: skipping {}", llvm::toString(std::move(e)));
      return ReadStatus::Skipped;
    }
    return fail(llvm::toString(std::move(e)), ReadStatus::Corrupt);
  }
  if (!parsed->rejected.empty()) {
    const std::string why = describeRejected(*parsed);
    warnOnce(path, fmt::format("fa4jit tuning: {}: ignoring {} record(s), which fall back to the heuristic and are kept "
                               "in the file until tuned again: {}",
                               path, parsed->rejected.size(), why));
    if (problem)
      *problem = why;
  }
  out = std::move(*parsed);
  return ReadStatus::Ok;
}

std::string fileIn(const std::string &dir, const TuningIdentity &id) {
  return dir.empty() ? std::string() : dir + "/" + deviceSlug(id.device_name, id.sm_count) + ".json";
}

// Writes `text` to `path` atomically: a temporary file in the same directory (so rename stays on
// one file system), fsynced, renamed over the old file, then the directory fsynced so the rename
// itself survives a crash.
llvm::Error publishAtomically(const std::string &dir, const std::string &path, const std::string &text) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp.%d.%lx", int(::getpid()), static_cast<unsigned long>(::random()));
  const std::string tmp = path + suffix;
  if (llvm::Error e = writeFileDurably(tmp, text)) {
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return errnoError("cannot rename tuning database into", path, err);
  }
  return fsyncDirectory(dir);
}

} // namespace

TuningDb::TuningDb(TuningDbConfig config, TuningIdentity identity)
    : config_(std::move(config)), identity_(std::move(identity)) {}

TuningDb::~TuningDb() = default;

std::string TuningDb::userFile() const { return fileIn(config_.user_dir, identity_); }
std::string TuningDb::systemFile() const { return fileIn(config_.system_dir, identity_); }

bool TuningDb::current(const TuningRecord &r) const {
  return r.identity.nvrtc == identity_.nvrtc && r.identity.fa4jit_version == identity_.fa4jit_version &&
         (!config_.match_driver || r.identity.driver == identity_.driver);
}

void TuningDb::ensureLoaded() const {
  if (loaded_)
    return;
  auto load = [&](const std::string &dir, bool ours, const std::string &path) -> std::unique_ptr<TuningFile> {
    TuningFile f;
    if (path.empty() || readFile(dir, ours, path, f) != ReadStatus::Ok)
      return nullptr;
    // A file copied from another device (same slug by accident) is not ours.
    if (f.device_name != identity_.device_name || f.sm_count != identity_.sm_count) {
      logging::logger().debug("fa4jit tuning: {} was written for {} ({} SMs); skipped", path, f.device_name, f.sm_count);
      return nullptr;
    }
    return std::make_unique<TuningFile>(std::move(f));
  };
  system_ = load(config_.system_dir, false, systemFile());
  user_ = load(config_.user_dir, true, userFile());
  loaded_ = true;
}

void TuningDb::reload() {
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_ = false;
  system_.reset();
  user_.reset();
}

const TuningRecord *TuningDb::findLocked(const std::string &k, TuningLayer *layer) const {
  ensureLoaded();
  auto search = [&](const TuningFile *f) -> const TuningRecord * {
    if (!f)
      return nullptr;
    auto it = f->records.find(k);
    return it != f->records.end() && current(it->second) ? &it->second : nullptr;
  };
  const std::pair<const TuningRecord *, TuningLayer> order[] = {
      {search(system_.get()), TuningLayer::System},
      {search(user_.get()), TuningLayer::User},
  };
  for (const auto &[record, which] : order)
    if (record) {
      if (layer)
        *layer = which;
      return record;
    }
  auto it = memory_.find(k);
  if (it == memory_.end())
    return nullptr;
  if (layer)
    *layer = TuningLayer::Memory;
  return &it->second;
}

std::optional<TuningRecord> TuningDb::lookup(const TuningKey &key, TuningLayer *layer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const TuningRecord *r = findLocked(key.str(), layer);
  return r ? std::optional<TuningRecord>(*r) : std::nullopt;
}

std::optional<KernelSpec> TuningDb::winnerSpec(const TuningKey &key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const TuningRecord *r = findLocked(key.str(), nullptr);
  return r ? std::optional<KernelSpec>(r->winnerResult().spec) : std::nullopt;
}

std::optional<TuningDb::DecodeWinner> TuningDb::winnerDecode(const TuningKey &key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const TuningRecord *r = findLocked(key.str(), nullptr);
  if (!r)
    return std::nullopt;
  return DecodeWinner{r->winnerResult().spec, r->winnerResult().splits};
}

llvm::Error TuningDb::store(TuningRecord record) {
  record.identity = identity_;
  if (record.winner < 0 || size_t(record.winner) >= record.candidates.size() ||
      !record.candidates[size_t(record.winner)].ok)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tuning record %s has no successfully timed winner", record.key.str().c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string k = record.key.str();
  if (config_.user_dir.empty()) {
    memory_[k] = std::move(record);
    return llvm::Error::success();
  }
  if (llvm::Error e = createPrivateDirectories(config_.user_dir))
    return e;
  if (llvm::Error e = checkPrivateDirectory(config_.user_dir, /*requireOwnedByUs=*/true))
    return e;
  const std::string path = userFile();
  // The lock serializes writers across processes (flock) and threads of this one (the mutex
  // above); readers never lock: they see the old or the new file, never a partial one.
  auto fileLock = FileLock::acquire(path + ".lock", /*wait=*/true);
  if (!fileLock)
    return fileLock.takeError();
  TuningFile merged;
  const ReadStatus status = readFile(config_.user_dir, true, path, merged);
  const bool usable =
      status == ReadStatus::Ok && merged.device_name == identity_.device_name && merged.sm_count == identity_.sm_count;
  if (status != ReadStatus::Missing && !usable) {
    // A file this process cannot merge into (corrupt, another schema, another device's) is moved
    // aside, never overwritten: its records stay on disk for a person or another fa4jit to read.
    const std::string aside = path + ".corrupt-" + std::to_string(static_cast<long long>(std::time(nullptr)));
    if (::rename(path.c_str(), aside.c_str()) != 0)
      return errnoError("cannot move aside the unusable tuning database", path, errno);
    logging::logger().warn("fa4jit tuning: moved the tuning database {}, which this fa4jit cannot merge into, aside "
                           "to {}",
                           path, aside);
  }
  if (!usable) {
    merged = TuningFile{};
    merged.device_name = identity_.device_name;
    merged.sm_count = identity_.sm_count;
  }
  merged.rejected.erase(k);
  merged.records[k] = std::move(record);
  if (llvm::Error e = publishAtomically(config_.user_dir, path, serializeTuningFile(merged)))
    return e;
  user_ = std::make_unique<TuningFile>(std::move(merged));
  if (!loaded_) {
    TuningFile sys;
    if (!systemFile().empty() && readFile(config_.system_dir, false, systemFile(), sys) == ReadStatus::Ok &&
        sys.device_name == identity_.device_name && sys.sm_count == identity_.sm_count)
      system_ = std::make_unique<TuningFile>(std::move(sys));
    loaded_ = true;
  }
  return llvm::Error::success();
}

std::vector<ListedRecord> TuningDb::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ensureLoaded();
  std::vector<ListedRecord> out;
  auto add = [&](const TuningFile *f, TuningLayer layer, const std::string &path) {
    if (f)
      for (const auto &[k, r] : f->records)
        out.push_back({r, layer, path, current(r)});
  };
  add(system_.get(), TuningLayer::System, systemFile());
  add(user_.get(), TuningLayer::User, userFile());
  for (const auto &[k, r] : memory_)
    out.push_back({r, TuningLayer::Memory, "", current(r)});
  return out;
}

std::optional<TuningFile> readTuningFile(const std::string &path, std::string *problem) {
  TuningFile f;
  const llvm::StringRef dir = llvm::StringRef(path).rsplit('/').first;
  // (a folder of this user's or root's; whether it must be this user's is the caller's layer rule)
  if (readFile(dir.str(), false, path, f, problem) != ReadStatus::Ok)
    return std::nullopt;
  return f;
}

std::vector<std::string> tuningFilesIn(const std::string &dir) {
  std::vector<std::string> out;
  for (const std::string &name : listDirectory(dir))
    if (llvm::StringRef(name).endswith(".json"))
      out.push_back(dir + "/" + name);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace fa4jit::cache
