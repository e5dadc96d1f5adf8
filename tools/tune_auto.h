#pragma once
// `fa4jit tune --auto`: route "auto" per shape and accuracy budget (docs/TUNING.md, "Route auto"):
// every route preset's predicted cosine, and with a GPU each preset that meets the budget timed
// from BF16 tensors, the fastest stored in the tuning database; `--predict` shows the choice the
// engine makes without a timed record (no GPU needed).
#include "cli_flags.h"

#include "fa4jit/runtime/config.h"

namespace fa4jit::tools {

// Runs the route choice of every shape of the flags; returns the exit code.
int runTuneAuto(const CliFlags &flags, const runtime::RuntimeConfig &config);

} // namespace fa4jit::tools
