#include "fa4jit/runtime/compiler.h"

#include "compile_repro.h"
#include "fa4jit/runtime/nvrtc_library.h"
#include "nvrtc_api.h"

#include <fa4jit/templates/embedded.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/ThreadPool.h>
#include <llvm/Support/Threading.h>

#include <chrono>
#include <cstdio>
#include <optional>

namespace fa4jit::runtime {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

// ptxas --verbose prints, per kernel:
//   ptxas info    : Function properties for <name>
//   ptxas         .     168 bytes stack frame, 164 bytes spill stores, 164 bytes spill loads
// and, for a kernel whose warpgroup MMAs it had to serialize,
//   ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are
//                   serialized due to <reason> in the function '<name>'
void addSpillCounts(llvm::StringRef log, CubinInfo &info) {
  llvm::SmallVector<llvm::StringRef, 32> lines;
  log.split(lines, '\n');
  for (CubinKernelInfo &k : info.kernels)
    k.wgmma_serialized = 0;
  for (llvm::StringRef line : lines) {
    if (!line.contains("wgmma.mma_async instructions are serialized"))
      continue;
    const size_t at = line.rfind("in the function '");
    const llvm::StringRef name = at == llvm::StringRef::npos ? "" : line.substr(at + 17).split('\'').first;
    for (CubinKernelInfo &k : info.kernels)
      if (name.empty() || k.name == name)
        k.wgmma_serialized = 1;
  }
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    llvm::StringRef line = lines[i];
    size_t at = line.find("Function properties for ");
    if (at == llvm::StringRef::npos)
      continue;
    llvm::StringRef name = line.substr(at + 24).trim();
    int frame = 0, stores = 0, loads = 0;
    llvm::StringRef next = lines[i + 1];
    size_t dot = next.find('.');
    if (dot == llvm::StringRef::npos)
      continue;
    if (std::sscanf(next.substr(dot + 1).str().c_str(),
                    " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &frame,
                    &stores, &loads) != 3)
      continue;
    for (CubinKernelInfo &k : info.kernels)
      if (k.name == name) {
        k.spill_store_bytes = stores;
        k.spill_load_bytes = loads;
      }
  }
}

struct Program {
  const NvrtcApi &api;
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle)
      api.nvrtcDestroyProgram(&handle);
  }
};

std::string programLog(const NvrtcApi &api, nvrtcProgram program) {
  size_t size = 0;
  if (api.nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1)
    return {};
  std::string log(size, '\0');
  if (api.nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
    return {};
  log.resize(size - 1); // drop the terminating NUL
  return log;
}

} // namespace

llvm::Expected<CompileResult> compile(const CompileRequest &request, const CompilerConfig &config) {
  llvm::Expected<std::vector<std::string>> options = normalizedOptions(request.options);
  if (!options)
    return options.takeError();
  llvm::Expected<const NvrtcLibrary &> nvrtc = NvrtcLibrary::get();
  if (!nvrtc)
    return nvrtc.takeError();
  const NvrtcApi &api = nvrtc->api();
  const GpuArch &arch = request.options.arch;
  if (!nvrtc->supportedArchs().empty() && !nvrtc->supportsSm(arch.smNumber()))
    return error(nvrtc->identity() + " cannot compile for " + arch.name() +
                 " (sm_" + std::to_string(arch.smNumber()) + " is not among its targets)");

  std::vector<const char *> headerContents, headerNames;
  std::size_t embeddedCount = 0;
  const templates::EmbeddedHeader *embedded = templates::embeddedHeaders(&embeddedCount);
  for (std::size_t i = 0; i < embeddedCount; ++i) {
    headerNames.push_back(embedded[i].name);
    headerContents.push_back(embedded[i].contents);
  }
  for (const InMemoryHeader &h : request.headers) {
    for (std::size_t i = 0; i < embeddedCount; ++i)
      if (h.name == embedded[i].name)
        return error("request header '" + h.name + "' would shadow the embedded template header "
                     "of the same name");
    headerNames.push_back(h.name.c_str());
    headerContents.push_back(h.contents.c_str());
  }

  std::vector<std::string> flags = *options;
  const bool hasNvrtcCache = nvrtc->major() > 12 || (nvrtc->major() == 12 && nvrtc->minor() >= 9);
  if (hasNvrtcCache && !config.nvrtc_cache)
    flags.push_back("--no-cache");
  if (config.precompiled_headers) {
    flags.push_back("-pch");
    if (!config.pch_dir.empty())
      flags.push_back("--pch-dir=" + config.pch_dir);
  }
  std::vector<const char *> argv;
  for (const std::string &f : flags)
    argv.push_back(f.c_str());

  auto start = std::chrono::steady_clock::now();
  Program program{api};
  nvrtcResult created = api.nvrtcCreateProgram(&program.handle, request.source.c_str(), request.name.c_str(),
                                               static_cast<int>(headerNames.size()), headerContents.data(),
                                               headerNames.data());
  if (created != NVRTC_SUCCESS)
    return error(std::string("nvrtcCreateProgram failed for ") + request.name + ": " +
                 api.nvrtcGetErrorString(created));
  nvrtcResult compiled = api.nvrtcCompileProgram(program.handle, static_cast<int>(argv.size()), argv.data());
  CompileResult result;
  result.log = programLog(api, program.handle);
  result.options = flags;
  if (compiled != NVRTC_SUCCESS) {
    detail::FailedCompile failure{&request, flags, api.nvrtcGetErrorString(compiled), result.log};
    return detail::compileError(failure, config.repro_dir);
  }
  size_t size = 0;
  nvrtcResult got = api.nvrtcGetCUBINSize(program.handle, &size);
  if (got == NVRTC_SUCCESS && size == 0)
    return error("NVRTC produced no cubin for " + request.name + " (" + arch.name() +
                 "): was it compiled for a virtual architecture?");
  if (got == NVRTC_SUCCESS) {
    result.cubin.resize(size);
    got = api.nvrtcGetCUBIN(program.handle, reinterpret_cast<char *>(result.cubin.data()));
  }
  if (got != NVRTC_SUCCESS)
    return error(std::string("nvrtcGetCUBIN failed for ") + request.name + ": " + api.nvrtcGetErrorString(got));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  llvm::Expected<CubinInfo> info = readCubinInfo(result.cubin);
  if (!info)
    return error("NVRTC's cubin for " + request.name + " is unreadable: " + llvm::toString(info.takeError()));
  if (info->arch.smNumber() != arch.smNumber())
    return error("NVRTC built " + request.name + " for " + info->arch.name() + " instead of " + arch.name());
  result.info = std::move(*info);
  addSpillCounts(result.log, result.info);
  return result;
}

std::vector<llvm::Expected<CompileResult>> compileMany(llvm::ArrayRef<CompileRequest> requests,
                                                       const CompilerConfig &config, unsigned threads) {
  std::vector<std::optional<llvm::Expected<CompileResult>>> slots(requests.size());
  {
    llvm::ThreadPool pool(llvm::hardware_concurrency(threads));
    for (size_t i = 0; i < requests.size(); ++i)
      pool.async([&, i] { slots[i].emplace(compile(requests[i], config)); });
    pool.wait();
  }
  std::vector<llvm::Expected<CompileResult>> results;
  results.reserve(requests.size());
  for (auto &slot : slots)
    results.push_back(std::move(*slot));
  return results;
}

} // namespace fa4jit::runtime

namespace fa4jit::runtime {
// Spill counts are in the ptxas log, not in the ELF: a cached cubin gets them from its stored log.
void addPtxasSpillCounts(llvm::StringRef log, CubinInfo &info) { addSpillCounts(log, info); }
} // namespace fa4jit::runtime
