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
// Marks the candidate timed with these statistics.
void recordTime(cache::CandidateResult &candidate, const TimingStats &t);
// fn(i) for warm-up i = 0 .. warmup-1, then for each repeat between two CUDA events on the legacy
// default stream; the statistics of the repeats (summarizeRepeats).
llvm::Expected<TimingStats> timeRepeats(const CudaDriver &driver, const std::function<llvm::Error(int)> &fn,
                                        int warmup, int reps);

} // namespace fa4jit::runtime
