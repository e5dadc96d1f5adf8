#pragma once
// What the attention and decode tuners share: the record's timestamp, error clipping, a timed
// candidate's fields, and CUDA-event timing of a repeated piece of work.
#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/runtime/tuner.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>

namespace fa4jit::runtime {

class CudaDriver;

std::string utcTimestamp(); // "2026-12-07T06:00:00Z"
// An error message cut to max_chars (a full NVRTC log does not belong in a database record).
std::string clipped(const std::string &text, size_t max_chars = 2000);
// The start of every tuning: true (and `out` filled from the database) when the key has a record
// and the options allow reusing it; an error for a replay-only miss; false when the key must be
// tuned.
llvm::Expected<bool> reuseRecord(const cache::TuningDb &db, const cache::TuningKey &key, const TunerOptions &options,
                                 TuneOutcome &out);
// The end of every tuning: the selected record stamped and stored, `out` told where it went.
llvm::Error storeRecord(cache::TuningDb &db, const Selection &chosen, const std::string &timing_source,
                        const std::string &problem, TuneOutcome &out);
// Marks the candidate timed with these statistics.
void recordTime(cache::CandidateResult &candidate, const TimingStats &t);
// fn(i) for warm-up i = 0 .. warmup-1, then for each repeat between two CUDA events on the legacy
// default stream (before_repeat(i), when given, runs before the repeat's first event); the
// statistics of the repeats (summarizeRepeats).
llvm::Expected<TimingStats> timeRepeats(const CudaDriver &driver, const std::function<llvm::Error(int)> &fn,
                                        int warmup, int reps,
                                        const std::function<llvm::Error(int)> &before_repeat = {});

} // namespace fa4jit::runtime
