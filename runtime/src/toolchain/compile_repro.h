#pragma once
// Private: what a failed compile leaves behind and says.
#include "fa4jit/runtime/compiler.h"

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace fa4jit::runtime::detail {

struct FailedCompile {
  const CompileRequest *request;
  std::vector<std::string> options; // as passed to NVRTC
  std::string nvrtc_result;         // "NVRTC_ERROR_COMPILATION"
  std::string log;
};

// The source with right-aligned line numbers: "  12 | text".
std::string numberLines(const std::string &source);

// Writes <repro_dir>/<program stem>-<hash>/ with the source, every header under include/,
// options.txt, nvrtc.log and repro.sh (nvcc with equivalent flags). Returns the directory.
llvm::Expected<std::string> writeReproducer(const FailedCompile &failure, const std::string &repro_dir);

// The error a failed compile returns: result, arch, log, options, numbered source, reproducer.
llvm::Error compileError(const FailedCompile &failure, const std::string &repro_dir);

// nvcc flags equivalent to NVRTC's (NVRTC-only flags such as PCH are dropped).
std::vector<std::string> nvccFlags(const std::vector<std::string> &nvrtc_options);

} // namespace fa4jit::runtime::detail
