#pragma once
// Rendering of tuning records for `fa4jit tune` (summary) and `fa4jit tune --show` (database).
#include "fa4jit/cache/tuning_db.h"

#include "llvm/Support/JSON.h"

#include <string>

namespace fa4jit::tools {

// Heuristic median / winner median (1 when the heuristic failed or is the winner).
double tunedSpeedup(const cache::TuningRecord &r);

// One record as JSON: key, winner and heuristic (label, ms), speedup, every candidate, identity.
llvm::json::Value recordJson(const cache::TuningRecord &r, bool with_candidates);

// A shape that failed to tune, on stdout: a JSON object {key, error}, or an indented table line.
void printTuneFailure(const std::string &key, const std::string &message, bool json);

// `fa4jit tune --show [--json]`: every tuning file in the user and system tuning directories.
// Exits 1 when a file or a record cannot be used (each named on stderr), else 0.
int showTuningDatabase(const cache::TuningDbConfig &config, bool json, bool candidates);

} // namespace fa4jit::tools
