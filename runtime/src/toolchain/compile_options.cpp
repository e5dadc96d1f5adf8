#include "fa4jit/runtime/compiler.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>

namespace fa4jit::runtime {
namespace {

// Flags owned by a CompileOptions field or by CompilerConfig, by prefix.
struct Refused {
  const char *prefix;
  const char *use_instead;
};
constexpr Refused kRefused[] = {
    {"-arch", "CompileOptions::arch"},
    {"--gpu-architecture", "CompileOptions::arch"},
    {"-std", "nothing (fa4jit kernels are C++17)"},
    {"--std", "nothing (fa4jit kernels are C++17)"},
    {"-fmad", "CompileOptions::fmad"},
    {"--fmad", "CompileOptions::fmad"},
    {"-use_fast_math", "CompileOptions::fast_math"},
    {"--use_fast_math", "CompileOptions::fast_math"},
    {"-lineinfo", "CompileOptions::line_info"},
    {"--generate-line-info", "CompileOptions::line_info"},
    {"-maxrregcount", "CompileOptions::max_registers"},
    {"--maxrregcount", "CompileOptions::max_registers"},
    {"-pch", "CompilerConfig::precompiled_headers"},
    {"--pch", "CompilerConfig::precompiled_headers"},
    {"--create-pch", "CompilerConfig::precompiled_headers"},
    {"--use-pch", "CompilerConfig::precompiled_headers"},
    {"--no-cache", "CompilerConfig::nvrtc_cache"},
};

} // namespace

llvm::Expected<std::vector<std::string>> normalizedOptions(const CompileOptions &options) {
  std::vector<std::string> flags = {"--gpu-architecture=" + options.arch.name(), "-std=c++17",
                                    options.fmad ? "--fmad=true" : "--fmad=false"};
  if (options.fast_math)
    flags.push_back("--use_fast_math");
  if (options.line_info)
    flags.push_back("-lineinfo");
  if (options.ptxas_verbose)
    flags.push_back("--ptxas-options=--verbose");
  if (options.max_registers > 0)
    flags.push_back("--maxrregcount=" + std::to_string(options.max_registers));
  for (const std::string &d : options.defines) {
    if (d.empty() || d.front() == '=' || d.find_first_of(" \t\n") != std::string::npos)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "invalid define '%s': expected NAME or NAME=VALUE without spaces",
                                     d.c_str());
    flags.push_back("-D" + d);
  }
  for (const std::string &flag : options.extra) {
    llvm::StringRef f(flag);
    for (const Refused &r : kRefused) {
      llvm::StringRef p(r.prefix);
      if (f == p || (f.startswith(p) && (f[p.size()] == '=' || f[p.size()] == '-' ||
                                         (p == "-arch" || p == "-std"))))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "compile flag '%s' is not accepted as an extra flag; set %s",
                                       flag.c_str(), r.use_instead);
    }
    if (f.trim().empty())
      continue;
    flags.push_back(f.trim().str());
  }
  std::sort(flags.begin(), flags.end());
  flags.erase(std::unique(flags.begin(), flags.end()), flags.end());
  return flags;
}

} // namespace fa4jit::runtime
