// What the tuners share (tune_common.h).
#include "tune_common.h"

#include "fa4jit/runtime/device_objects.h"
#include "fa4jit/runtime/tune_timing.h"

#include <algorithm>
#include <ctime>
#include <vector>

namespace fa4jit::runtime {

std::string utcTimestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string clipped(const std::string &text, size_t max_chars) { return text.substr(0, std::min(text.size(), max_chars)); }

llvm::Expected<bool> reuseRecord(const cache::TuningDb &db, const cache::TuningKey &key, const TunerOptions &options,
                                 TuneOutcome &out) {
  if (!options.force)
    if (auto found = db.lookup(key, &out.layer)) {
      out.record = std::move(*found);
      out.from_database = true;
      return true;
    }
  if (options.replay_only)
    return replayMiss(db, key);
  return false;
}

llvm::Error storeRecord(cache::TuningDb &db, const Selection &chosen, const std::string &timing_source,
                        const std::string &problem, TuneOutcome &out) {
  cache::TuningRecord &rec = out.record;
  rec.winner = chosen.winner;
  rec.tie_band = chosen.band;
  rec.timing_source = timing_source;
  rec.problem = problem;
  rec.tuned_at = utcTimestamp();
  if (llvm::Error e = db.store(rec))
    return e;
  out.layer = db.config().user_dir.empty() ? cache::TuningLayer::Memory : cache::TuningLayer::User;
  rec.identity = db.identity();
  return llvm::Error::success();
}

void recordTime(cache::CandidateResult &c, const TimingStats &t) {
  c.ok = true;
  c.median_ms = t.median_ms;
  c.min_ms = t.min_ms;
  c.max_ms = t.max_ms;
  c.reps = t.reps;
  c.noise = t.noise;
}

llvm::Expected<TimingStats> timeRepeats(const CudaDriver &driver, const std::function<llvm::Error(int)> &fn,
                                        int warmup, int reps, const std::function<llvm::Error(int)> &before_repeat) {
  for (int i = 0; i < warmup; ++i)
    if (auto e = fn(i))
      return e;
  std::vector<Event> starts, ends;
  for (int i = 0; i < reps; ++i) {
    auto s = Event::create(driver);
    if (!s)
      return s.takeError();
    auto e = Event::create(driver);
    if (!e)
      return e.takeError();
    starts.push_back(std::move(*s));
    ends.push_back(std::move(*e));
  }
  for (int i = 0; i < reps; ++i) {
    if (before_repeat)
      if (auto e = before_repeat(i))
        return e;
    if (auto e = starts[size_t(i)].record())
      return e;
    if (auto e = fn(i))
      return e;
    if (auto e = ends[size_t(i)].record())
      return e;
  }
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t = Event::elapsedMs(starts[size_t(i)], ends[size_t(i)]);
    if (!t)
      return t.takeError();
    ms.push_back(*t);
  }
  return summarizeRepeats(std::move(ms));
}

} // namespace fa4jit::runtime
