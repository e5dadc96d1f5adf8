#include "compile_repro.h"

#include <fa4jit/templates/embedded.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <fmt/format.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

#include <sys/stat.h>

namespace fa4jit::runtime::detail {
namespace {

llvm::Error writeFile(const llvm::Twine &path, llvm::StringRef contents) {
  if (std::error_code ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path.str())))
    return llvm::createStringError(ec, "cannot create directory for %s: %s", path.str().c_str(),
                                   ec.message().c_str());
  std::error_code ec;
  llvm::raw_fd_ostream out(path.str(), ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write %s: %s", path.str().c_str(), ec.message().c_str());
  out << contents;
  out.close();
  if (out.has_error())
    return llvm::createStringError(out.error(), "cannot write %s", path.str().c_str());
  return llvm::Error::success();
}

std::string shellQuote(llvm::StringRef s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

} // namespace

std::string numberLines(const std::string &source) {
  llvm::SmallVector<llvm::StringRef, 64> lines;
  llvm::StringRef(source).split(lines, '\n');
  if (!lines.empty() && lines.back().empty())
    lines.pop_back();
  std::string out;
  const int width = static_cast<int>(std::to_string(lines.size()).size());
  for (size_t i = 0; i < lines.size(); ++i)
    out += fmt::format("{:>{}} | {}\n", i + 1, width, lines[i].rtrim('\r').str());
  return out;
}

std::vector<std::string> nvccFlags(const std::vector<std::string> &nvrtc_options) {
  std::vector<std::string> flags = {"-cubin"};
  for (const std::string &o : nvrtc_options) {
    llvm::StringRef f(o);
    if (f.consume_front("--gpu-architecture="))
      flags.push_back("-arch=" + f.str());
    else if (f == "-pch" || f == "--pch" || f.startswith("--pch-dir") || f == "--no-cache" ||
             f == "-default-device")
      continue; // NVRTC-only; they do not change the generated code
    else
      flags.push_back(o);
  }
  return flags;
}

llvm::Expected<std::string> writeReproducer(const FailedCompile &failure, const std::string &repro_dir) {
  const CompileRequest &req = *failure.request;
  llvm::SHA256 sha;
  sha.update(req.source);
  for (const std::string &o : failure.options)
    sha.update(o + "\n");
  std::string digest = llvm::toHex(sha.final(), /*LowerCase=*/true).substr(0, 12);
  std::string stem = llvm::sys::path::stem(req.name).str();
  llvm::SmallString<256> dir(repro_dir);
  llvm::sys::path::append(dir, stem + "-" + digest);

  auto write = [&](llvm::StringRef relative, llvm::StringRef contents) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, relative);
    return writeFile(path, contents);
  };
  std::string sourceFile = llvm::sys::path::filename(req.name).str();
  if (llvm::Error e = write(sourceFile, req.source))
    return e;
  std::size_t count = 0;
  const templates::EmbeddedHeader *embedded = templates::embeddedHeaders(&count);
  for (std::size_t i = 0; i < count; ++i)
    if (llvm::Error e = write(std::string("include/") + embedded[i].name,
                              llvm::StringRef(embedded[i].contents, embedded[i].size)))
      return e;
  for (const InMemoryHeader &h : req.headers)
    if (llvm::Error e = write("include/" + h.name, h.contents))
      return e;
  std::string optionsText;
  for (const std::string &o : failure.options)
    optionsText += o + "\n";
  if (llvm::Error e = write("options.txt", optionsText))
    return e;
  if (llvm::Error e = write("nvrtc.log", failure.log))
    return e;

  std::string script =
      "#!/bin/sh\n"
      "# Reruns a failed fa4jit NVRTC compile with nvcc (same flags; NVRTC-only flags dropped).\n"
      "# NVRTC defines __CUDACC_RTC__ and nvcc does not, so headers take their nvcc branches;\n"
      "# options.txt holds the exact NVRTC flags and nvrtc.log what NVRTC said.\n"
      "cd \"$(dirname \"$0\")\" || exit 1\n"
      "exec \"${NVCC:-/usr/local/cuda/bin/nvcc}\"";
  for (const std::string &f : nvccFlags(failure.options))
    script += " " + shellQuote(f);
  script += " -I include -o " + shellQuote(llvm::sys::path::stem(sourceFile).str() + ".cubin") + " " +
            shellQuote(sourceFile) + " \"$@\"\n";
  if (llvm::Error e = write("repro.sh", script))
    return e;
  llvm::SmallString<256> scriptPath(dir);
  llvm::sys::path::append(scriptPath, "repro.sh");
  ::chmod(scriptPath.c_str(), 0755);
  return std::string(dir.str());
}

llvm::Error compileError(const FailedCompile &failure, const std::string &repro_dir) {
  const CompileRequest &req = *failure.request;
  std::string options;
  for (const std::string &o : failure.options)
    options += (options.empty() ? "" : " ") + o;
  std::string message = "NVRTC failed to compile " + req.name + " for " +
                        req.options.arch.name() + ": " + failure.nvrtc_result + "\n";
  message += "options: " + options + "\n";
  message += "log:\n" + (failure.log.empty() ? std::string("(empty)\n") : failure.log);
  if (!message.empty() && message.back() != '\n')
    message += "\n";
  message += "source " + req.name + ":\n" + numberLines(req.source);
  if (!repro_dir.empty()) {
    llvm::Expected<std::string> dir = writeReproducer(failure, repro_dir);
    if (dir)
      message += "reproducer: " + *dir + " (run repro.sh)";
    else
      message += "reproducer not written: " + llvm::toString(dir.takeError());
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace fa4jit::runtime::detail
