#pragma once
// Finds and runs cuobjdump (CUDA's disassembler; it reads sm_100a cubins on any machine). Looked up
// on PATH, in the toolkit, then in the Python `nvidia` namespace packages that the PyPI package
// nvidia-cuda-cuobjdump installs (scripts/install-deps.sh installs it for CI).
#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/Optional.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fa4jit::testing {

inline std::optional<std::string> runCapture(llvm::StringRef program, llvm::ArrayRef<llvm::StringRef> args) {
  llvm::SmallString<128> out;
  if (llvm::sys::fs::createTemporaryFile("fa4jit-capture", "txt", out))
    return std::nullopt;
  // LLVM 14 spells optionals llvm::Optional.
  const llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(out), llvm::StringRef("")};
  const int rc = llvm::sys::ExecuteAndWait(program, args, llvm::None, redirects);
  auto buffer = llvm::MemoryBuffer::getFile(out);
  llvm::sys::fs::remove(out);
  if (rc != 0 || !buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

inline std::optional<std::string> findCuobjdump() {
  if (auto p = llvm::sys::findProgramByName("cuobjdump"))
    return *p;
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/cuobjdump"))
    return std::string("/usr/local/cuda/bin/cuobjdump");
  auto python = llvm::sys::findProgramByName("python3");
  if (!python)
    return std::nullopt;
  const std::optional<std::string> dirs = runCapture(
      *python, {*python, "-c", "import nvidia\nfor p in nvidia.__path__: print(p)"});
  if (!dirs)
    return std::nullopt;
  llvm::StringRef rest = *dirs;
  while (!rest.empty()) {
    auto [line, tail] = rest.split('\n');
    rest = tail;
    for (const char *sub : {"/cu13/bin/cuobjdump", "/cuda_cuobjdump/bin/cuobjdump", "/cu12/bin/cuobjdump"}) {
      const std::string candidate = line.trim().str() + sub;
      if (!line.trim().empty() && llvm::sys::fs::can_execute(candidate))
        return candidate;
    }
  }
  return std::nullopt;
}

// SASS text of a cubin, or nullopt when cuobjdump fails.
inline std::optional<std::string> disassemble(const std::string &cuobjdump, const std::vector<std::uint8_t> &cubin) {
  llvm::SmallString<128> path;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("fa4jit-sass", "cubin", fd, path))
    return std::nullopt;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(reinterpret_cast<const char *>(cubin.data()), cubin.size());
  }
  std::optional<std::string> sass = runCapture(cuobjdump, {cuobjdump, "--dump-sass", path});
  llvm::sys::fs::remove(path);
  return sass;
}

} // namespace fa4jit::testing
