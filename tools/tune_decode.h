#pragma once
// `fa4jit tune --decode`: decode plans (warps, key splits) per decode shape over the paged cache,
// into the tuning database that Engine::decodePlan reads (docs/TUNING.md, "Decode plans").
#include "cli_flags.h"

#include "fa4jit/runtime/config.h"

namespace fa4jit::tools {

// Runs the tuning of every shape of the decode grid flags; returns the exit code.
int runTuneDecode(const CliFlags &flags, const runtime::RuntimeConfig &config);

} // namespace fa4jit::tools
