#include "compile_repro.h"

#include <fa4jit/templates/embedded.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <fmt/format.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fa4jit::runtime::detail {
namespace {

// The reproducer follows the kernel cache's rules, since the error message tells the user to run
// its script: its folders are 0700 and this user's, nothing is written through a symbolic link,
// and no folder above it may be written by others without the sticky bit (a folder the cache
// refuses, such as a world-writable cache root, is refused here too).
llvm::Error refuse(const std::string &path, const char *why) {
  return llvm::createStringError(std::errc::permission_denied, "refusing reproducer path %s: %s", path.c_str(), why);
}

// Every existing folder above `dir` (followed, as the user names it).
llvm::Error checkAncestors(const std::string &dir) {
  llvm::StringRef rest(dir);
  std::string at;
  while (!rest.empty()) {
    llvm::StringRef part;
    std::tie(part, rest) = rest.ltrim('/').split('/');
    if (part.empty() || rest.ltrim('/').empty())
      break; // (the last component is `dir` itself)
    at += "/" + part.str();
    struct stat st;
    if (::stat(at.c_str(), &st) != 0)
      break; // (created below, private)
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
      return refuse(at, "it is writable by group or others without the sticky bit");
  }
  return llvm::Error::success();
}

// mkdir (0700) of one folder, or the checks of an existing one: a real folder, not a symbolic
// link, owned by this user and writable by nobody else.
llvm::Error privateFolder(const std::string &path) {
  if (::mkdir(path.c_str(), 0700) == 0)
    return llvm::Error::success();
  if (errno != EEXIST)
    return llvm::createStringError(std::error_code(errno, std::generic_category()), "cannot create %s: %s",
                                   path.c_str(), std::strerror(errno));
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return llvm::createStringError(std::error_code(errno, std::generic_category()), "cannot inspect %s",
                                   path.c_str());
  if (S_ISLNK(st.st_mode))
    return refuse(path, "it is a symbolic link");
  if (!S_ISDIR(st.st_mode))
    return refuse(path, "it is not a folder");
  if (st.st_uid != ::geteuid())
    return refuse(path, "it belongs to another user");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return refuse(path, "it is writable by group or others");
  return llvm::Error::success();
}

// The private folders from `root` (absolute, its ancestors checked) down to `path`'s parent.
llvm::Error privateFolders(const std::string &root, llvm::StringRef relative_dir) {
  // The root's own missing ancestors are created 0700 as well.
  std::string at;
  llvm::StringRef rest(root);
  while (!rest.empty()) {
    llvm::StringRef part;
    std::tie(part, rest) = rest.ltrim('/').split('/');
    if (part.empty())
      break;
    at += "/" + part.str();
    struct stat st;
    if (rest.ltrim('/').empty() || ::stat(at.c_str(), &st) != 0)
      if (llvm::Error e = privateFolder(at))
        return e;
  }
  at = root;
  rest = relative_dir;
  while (!rest.empty()) {
    llvm::StringRef part;
    std::tie(part, rest) = rest.split('/');
    if (part.empty() || part == "." || part == "..")
      return refuse(root + "/" + relative_dir.str(), "it is not a plain relative path");
    at += "/" + part.str();
    if (llvm::Error e = privateFolder(at))
      return e;
  }
  return llvm::Error::success();
}

// Creates or replaces one file of the reproducer (never through a symbolic link).
llvm::Error writeFile(const std::string &path, llvm::StringRef contents, mode_t mode) {
  int fd;
  do
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return errno == ELOOP ? refuse(path, "it is a symbolic link")
                          : llvm::createStringError(std::error_code(errno, std::generic_category()),
                                                    "cannot write %s: %s", path.c_str(), std::strerror(errno));
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out << contents;
  out.close();
  if (out.has_error())
    return llvm::createStringError(out.error(), "cannot write %s", path.c_str());
  ::chmod(path.c_str(), mode); // (an older file of the same name keeps its mode through O_TRUNC)
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
  llvm::SmallString<256> root(repro_dir);
  llvm::sys::path::remove_dots(root, /*remove_dot_dot=*/true);
  if (!llvm::sys::path::is_absolute(root))
    return refuse(repro_dir, "it is not an absolute path");
  const std::string folder = stem + "-" + digest;
  if (llvm::Error e = checkAncestors(std::string(root.str())))
    return e;
  if (llvm::Error e = privateFolders(std::string(root.str()), folder))
    return e;
  const std::string dir = std::string(root.str()) + "/" + folder;

  auto write = [&](llvm::StringRef relative, llvm::StringRef contents, mode_t mode = 0600) -> llvm::Error {
    const llvm::StringRef parent = llvm::sys::path::parent_path(relative, llvm::sys::path::Style::posix);
    if (!parent.empty())
      if (llvm::Error e = privateFolders(dir, parent))
        return e;
    return writeFile(dir + "/" + relative.str(), contents, mode);
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
  if (llvm::Error e = write("repro.sh", script, 0700))
    return e;
  return dir;
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
