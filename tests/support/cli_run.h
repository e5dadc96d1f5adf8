#pragma once
// Runs the built `fa4jit` binary (FA4JIT_CLI) as a user would, for the CLI tests.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace fa4jit::testing {

struct CliRun {
  int status = -1;  // exit code, -1 if killed by a signal
  std::string out;  // stdout (and stderr when merged)
};

enum class Stderr { Discard, Merge };

// `fa4jit <args>` through the shell; args are passed verbatim.
inline CliRun runFa4jit(const std::string &args, Stderr err = Stderr::Discard) {
  CliRun r;
  const std::string cmd =
      std::string(FA4JIT_CLI) + " " + args + (err == Stderr::Merge ? " 2>&1" : " 2>/dev/null");
  FILE *p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

} // namespace fa4jit::testing
