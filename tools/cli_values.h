#pragma once
// The values of the flags several subcommands share (cli_flags.h's shared_flags), parsed and
// checked in one place: the same names, ranges and messages in every subcommand.
#include "cli_flags.h"

#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/codegen/spec.h"

#include <vector>

namespace fa4jit::tools {

llvm::Expected<std::vector<Route>> routesFlag(const CliFlags &flags, llvm::StringRef fallback);
llvm::Expected<std::vector<Target>> targetsFlag(const CliFlags &flags, llvm::StringRef fallback);
// Head dims the kernels have: 64, 128, 256.
llvm::Expected<std::vector<int>> headDimsFlag(const CliFlags &flags, llvm::StringRef fallback);
// Sequence lengths, 1 to kMaxCliSeqlen.
llvm::Expected<std::vector<int>> seqlensFlag(const CliFlags &flags, llvm::StringRef fallback);
llvm::Expected<std::vector<bool>> causalFlag(const CliFlags &flags, llvm::StringRef fallback);
// Compile threads: 0 (every core) to kMaxCliThreads.
llvm::Expected<unsigned> threadsFlag(const CliFlags &flags);

// The single-value forms, for subcommands about one kernel or shape (run, emit, tmem).
llvm::Expected<Route> routeFlag(const CliFlags &flags, llvm::StringRef fallback);
// --route as route presets (route_presets.h: the routes and the E4M3 Q/K presets fp8, fp8-directp).
llvm::Expected<std::vector<RoutePreset>> routePresetsFlag(const CliFlags &flags, llvm::StringRef fallback);
llvm::Expected<RoutePreset> routePresetFlag(const CliFlags &flags, llvm::StringRef fallback);
llvm::Expected<Target> targetFlag(const CliFlags &flags, llvm::StringRef fallback);
llvm::Expected<int> headDimFlag(const CliFlags &flags, llvm::StringRef fallback);

constexpr int kMaxCliSeqlen = 1 << 20;
// More threads than this only queue on the same cores (and a negative count would wrap).
constexpr long kMaxCliThreads = 1024;

} // namespace fa4jit::tools
