#include "fa4jit/runtime/compiler.h"

#include <catch2/catch.hpp>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace fa4jit::runtime;

namespace {

std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

std::string between(const std::string &text, const std::string &from, const std::string &to) {
  size_t a = text.find(from);
  if (a == std::string::npos)
    return {};
  a += from.size();
  size_t b = text.find(to, a);
  return text.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

} // namespace

TEST_CASE("a failed compile carries log, options, numbered source and a reproducer", "[runtime][nvrtc]") {
  llvm::SmallString<128> repro;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("fa4jit-repro-test", repro));

  CompileRequest r;
  r.name = "broken_kernel.cu";
  r.source = "#include \"fa4jit/common.cuh\"\n"
             "extern \"C\" __global__ void broken(float *out) {\n"
             "  out[threadIdx.x] = undefined_symbol;\n"
             "}\n";
  r.options.defines = {"FA4JIT_TEST=1"};
  CompilerConfig config;
  config.repro_dir = std::string(repro.str());

  auto result = compile(r, config);
  REQUIRE(!result);
  const std::string message = llvm::toString(result.takeError());
  INFO(message);
  CHECK_THAT(message, Catch::Contains("NVRTC failed to compile broken_kernel.cu for sm_90a"));
  CHECK_THAT(message, Catch::Contains("NVRTC_ERROR_COMPILATION"));
  // NVRTC's log, pointing at line 3.
  CHECK_THAT(message, Catch::Contains("broken_kernel.cu(3): error"));
  CHECK_THAT(message, Catch::Contains("undefined_symbol"));
  // Options.
  CHECK_THAT(message, Catch::Contains("options: "));
  CHECK_THAT(message, Catch::Contains("--gpu-architecture=sm_90a"));
  CHECK_THAT(message, Catch::Contains("-DFA4JIT_TEST=1"));
  // Numbered source.
  CHECK_THAT(message, Catch::Contains("1 | #include \"fa4jit/common.cuh\""));
  CHECK_THAT(message, Catch::Contains("3 |   out[threadIdx.x] = undefined_symbol;"));

  const std::string dir = between(message, "reproducer: ", " (run repro.sh)");
  REQUIRE(!dir.empty());
  CHECK(llvm::StringRef(dir).startswith(repro.str()));
  auto path = [&](const char *relative) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, relative);
    return std::string(p.str());
  };
  CHECK(readFile(path("broken_kernel.cu")) == r.source);
  CHECK_THAT(readFile(path("include/fa4jit/common.cuh")), Catch::Contains("namespace fa4jit::device"));
  const std::string options = readFile(path("options.txt"));
  CHECK_THAT(options, Catch::Contains("--gpu-architecture=sm_90a\n"));
  CHECK_THAT(options, Catch::Contains("-std=c++17\n"));
  CHECK_THAT(readFile(path("nvrtc.log")), Catch::Contains("undefined_symbol"));
  const std::string script = readFile(path("repro.sh"));
  CHECK_THAT(script, Catch::Contains("'-arch=sm_90a'"));
  CHECK_THAT(script, Catch::Contains("'-cubin'"));
  CHECK_THAT(script, Catch::Contains("'--fmad=false'"));
  llvm::sys::fs::file_status status;
  REQUIRE(!llvm::sys::fs::status(path("repro.sh"), status));
  CHECK((status.permissions() & llvm::sys::fs::owner_exe) != 0);

  // The reproducer reproduces: nvcc fails on the same undefined symbol.
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/nvcc")) {
    std::string err;
    llvm::SmallString<128> out;
    llvm::sys::fs::createTemporaryFile("repro", "log", out);
    llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(out), llvm::StringRef(out)};
    int rc = llvm::sys::ExecuteAndWait("/bin/sh", {"/bin/sh", path("repro.sh")}, llvm::None, redirects,
                                       /*SecondsToWait=*/120, 0, &err);
    CHECK(rc != 0);
    CHECK_THAT(readFile(std::string(out.str())), Catch::Contains("undefined_symbol"));
    llvm::sys::fs::remove(out);
  }
  llvm::sys::fs::remove_directories(repro);
}

TEST_CASE("without a repro dir the error still carries everything but writes nothing", "[runtime][nvrtc]") {
  CompileRequest r;
  r.name = "syntax.cu";
  r.source = "extern \"C\" __global__ void k() {\n  int x = ;\n}\n";
  r.options.arch = {10, 0, ArchSuffix::ArchSpecific};
  auto result = compile(r);
  REQUIRE(!result);
  const std::string message = llvm::toString(result.takeError());
  CHECK_THAT(message, Catch::Contains("for sm_100a"));
  CHECK_THAT(message, Catch::Contains("syntax.cu(2)"));
  CHECK_THAT(message, Catch::Contains("2 |   int x = ;"));
  CHECK_THAT(message, !Catch::Contains("reproducer"));
}

TEST_CASE("an unwritable repro dir is reported, not fatal", "[runtime][nvrtc]") {
  CompileRequest r;
  r.source = "this does not compile\n";
  CompilerConfig config;
  config.repro_dir = "/proc/fa4jit-cannot-write-here";
  auto result = compile(r, config);
  REQUIRE(!result);
  const std::string message = llvm::toString(result.takeError());
  CHECK_THAT(message, Catch::Contains("NVRTC_ERROR_COMPILATION"));
  CHECK_THAT(message, Catch::Contains("reproducer not written"));
}

TEST_CASE("the reproducer follows the cache's folder rules", "[runtime][nvrtc]") {
  llvm::SmallString<128> base;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("fa4jit-repro-rules", base));
  const std::string root = std::string(base.str());
  CompileRequest r;
  r.name = "rules.cu";
  r.source = "this does not compile\n";
  auto messageFor = [&](const std::string &repro_dir) {
    CompilerConfig config;
    config.repro_dir = repro_dir;
    auto result = compile(r, config);
    REQUIRE(!result);
    return llvm::toString(result.takeError());
  };
  // Written: private folders, a 0600 source and a 0700 script.
  const std::string ok = messageFor(root + "/ok");
  const std::string dir = between(ok, "reproducer: ", " (run repro.sh)");
  REQUIRE(!dir.empty());
  struct stat st;
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(::stat((dir + "/include/fa4jit").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(::stat((dir + "/rules.cu").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  REQUIRE(::stat((dir + "/repro.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);

  // Refused: under a folder others may write (a cache root the cache refuses), through a
  // symbolic link, and a script that is a link to elsewhere.
  const std::string open_folder = root + "/open";
  REQUIRE(::mkdir(open_folder.c_str(), 0777) == 0);
  REQUIRE(::chmod(open_folder.c_str(), 0777) == 0);
  const std::string under_open = messageFor(open_folder + "/repro");
  CHECK_THAT(under_open, Catch::Contains("reproducer not written") && Catch::Contains("writable by group or others"));
  CHECK(::access((open_folder + "/repro").c_str(), F_OK) != 0);

  REQUIRE(::symlink((root + "/ok").c_str(), (root + "/link").c_str()) == 0);
  CHECK_THAT(messageFor(root + "/link"), Catch::Contains("reproducer not written") && Catch::Contains("symbolic link"));

  const std::string target = root + "/elsewhere.sh";
  REQUIRE(::unlink((dir + "/repro.sh").c_str()) == 0);
  REQUIRE(::symlink(target.c_str(), (dir + "/repro.sh").c_str()) == 0);
  CHECK_THAT(messageFor(root + "/ok"), Catch::Contains("reproducer not written") && Catch::Contains("symbolic link"));
  CHECK(::access(target.c_str(), F_OK) != 0);

  CHECK_THAT(messageFor("relative/repro"), Catch::Contains("not an absolute path"));
  llvm::sys::fs::remove_directories(root);
}
