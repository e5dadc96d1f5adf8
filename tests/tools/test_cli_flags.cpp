// One flag parser for every subcommand (tools/cli_flags.h): the same names for the same things,
// lists wherever a subcommand takes several values, `--causal` alone meaning 1, and the same
// message and exit status 2 for the same mistake whichever subcommand makes it.
#include "cli_run.h"

#include <catch2/catch.hpp>
#include <string>

using fa4jit::testing::runFa4jit;
using fa4jit::testing::Stderr;

TEST_CASE("every subcommand names a bad head dim alike and exits 2", "[cli]") {
  for (const char *command : {"bench", "tune", "compile", "accuracy", "emit", "run", "tmem --route directp"})
    for (const char *flag : {"--head-dim", "--head-dims"}) {
      const std::string args = std::string(command) + " " + flag + " 96";
      INFO(args);
      const auto r = runFa4jit(args, Stderr::Merge);
      CHECK(r.status == 2);
      CHECK_THAT(r.out, Catch::Contains("--head-dim 96: give 64, 128 or 256"));
    }
}

TEST_CASE("every subcommand names a bad route, causal value or empty list alike", "[cli]") {
  for (const char *command : {"bench", "tune", "compile", "accuracy", "emit", "run"}) {
    const struct {
      std::string args, message;
    } cases[] = {
        {"--route fp4", "--route: unknown route 'fp4'"},
        {"--routes fp4", "--route: unknown route 'fp4'"},
        {"--causal 2", "--causal 2: give 0, 1, false or true"},
        {"--route bf16,,directp", "--route 'bf16,,directp': an empty item"},
        {"--no-such-flag", "unknown option '--no-such-flag'"},
    };
    for (const auto &c : cases) {
      const std::string args = std::string(command) + " " + c.args;
      INFO(args);
      const auto r = runFa4jit(args, Stderr::Merge);
      CHECK(r.status == 2);
      CHECK_THAT(r.out, Catch::Contains(c.message));
    }
  }
}

TEST_CASE("a subcommand about one kernel refuses a list of routes or head dims", "[cli]") {
  for (const char *args : {"emit --route bf16,directp", "run --route bf16,directp", "tmem --route directp,nvfp8 --head-dim 128",
                           "emit --head-dim 64,128", "run --causal 0,1"}) {
    INFO(args);
    const auto r = runFa4jit(args, Stderr::Merge);
    CHECK(r.status == 2);
    CHECK_THAT(r.out, Catch::Contains("this command takes one value"));
  }
}

TEST_CASE("--causal alone means 1, and every spelling of a value gives the same kernel", "[cli]") {
  const auto name = [](const std::string &flags) {
    const auto r = runFa4jit("emit --json --route nvfp8 " + flags);
    REQUIRE(r.status == 0);
    const auto at = r.out.find("\"kernel\"");
    REQUIRE(at != std::string::npos);
    return r.out.substr(at, r.out.find('\n', at) - at);
  };
  const std::string causal = name("--causal --head-dim 64");
  CHECK(causal.find("_c1_") != std::string::npos);
  CHECK(name("--causal 1 --head-dim 64") == causal);
  CHECK(name("--causal=true --head-dims=64") == causal);
  CHECK(name("--head-dim 64 --causal") == causal); // (last, with no value after it)
  const std::string plain = name("--head-dim 64");
  CHECK(plain.find("_c0_") != std::string::npos);
  CHECK(name("--causal=0 --head-dim 64") == plain);
  CHECK(name("--causal false --head-dims 64") == plain);
}

TEST_CASE("the accuracy grid takes the shared list flags under either spelling", "[cli][accuracy]") {
  const auto rows = [](const std::string &flags) {
    const auto r = runFa4jit("accuracy --json --sigma 1 --rows 4 --classifiers threshold " + flags);
    REQUIRE(r.status == 0);
    return r.out;
  };
  const std::string singular = rows("--route bf16,nvfp8 --head-dim 64 --seqlen 128 --causal");
  CHECK(singular == rows("--routes bf16,nvfp8 --head-dims 64 --seqlens 128 --causal 1"));
  CHECK(singular.find("\"nvfp8\"") != std::string::npos);
  CHECK(singular.find("\"directp\"") == std::string::npos);
}

TEST_CASE("cache takes one command word and only its own options", "[cli][cache]") {
  for (const auto &[args, message] : std::initializer_list<std::pair<const char *, const char *>>{
           {"cache ls extra", "unexpected argument 'extra'"},
           {"cache ls --fix", "--fix is an option of 'cache verify'"},
           {"cache stat --max-bytes 1M", "--max-bytes is an option of 'cache prune'"},
           {"cache frob", "unknown cache command 'frob'"},
       }) {
    INFO(args);
    const auto r = runFa4jit(args, Stderr::Merge);
    CHECK(r.status == 2);
    CHECK_THAT(r.out, Catch::Contains(message));
  }
}
