// `fa4jit tune --auto --predict`: route "auto" without a GPU, the CPU models' predicted cosine of
// every preset and the engine's untimed choice per shape and logit scale; bad budgets refused.
#include "cli_run.h"

#include "llvm/Support/JSON.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

using fa4jit::testing::runFa4jit;
using fa4jit::testing::Stderr;

TEST_CASE("tune --auto --predict picks the format that holds at each logit scale", "[cli][tune][auto]") {
  const auto r = runFa4jit("tune --auto --predict --json --logit-std 1,16,900 --min-cosine 0.98", Stderr::Merge);
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::vector<std::string> winners;
  size_t at = 0;
  for (size_t nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    auto v = llvm::json::parse(r.out.substr(at, nl - at));
    REQUIRE(static_cast<bool>(v));
    const llvm::json::Object &o = *v->getAsObject();
    CHECK(*o.getInteger("candidates") == 5); // every sm_90a preset
    CHECK(o.getArray("candidate_results")->size() == 5);
    winners.push_back(o.getString("winner")->str());
    CHECK(*o.getNumber("winner_cosine") >= 0.98);
  }
  CHECK(winners == std::vector<std::string>{"fp8-directp", "fp8-directp", "bf16"});
}

TEST_CASE("tune --auto refuses bad budgets and flags of the other modes", "[cli][tune][auto]") {
  for (const char *args : {"tune --auto --predict --logit-std 0", "tune --auto --predict --logit-std -3",
                           "tune --auto --predict --min-cosine 1.5", "tune --auto --predict --route nvfp8",
                           "tune --logit-std 4", "tune --auto --predict --target sm_75"}) {
    INFO(args);
    const auto r = runFa4jit(args, Stderr::Merge);
    CHECK(r.status != 0);
    CHECK(r.out.find("fa4jit tune") != std::string::npos);
  }
}

TEST_CASE("tune --auto --calibration measures the logit scale from captured scores", "[cli][tune][auto]") {
  // Scores of standard deviation 32 within each row, scale 1/sqrt(64): logit std 4.
  std::string text = "fa4jit-calibration 1\nhead_dim 64\nseqlen 64\nscores\n";
  for (int r = 0; r < 4; ++r) {
    for (int j = 0; j < 64; ++j)
      text += std::string(j % 2 ? "32" : "-32") + " ";
    text += "\n";
  }
  const std::string path = "/tmp/fa4jit_test_" + std::to_string(::getpid()) + "_auto.cal";
  {
    std::ofstream out(path);
    out << text;
  }
  const auto r = runFa4jit("tune --auto --predict --head-dim 64 --calibration " + path, Stderr::Merge);
  std::remove(path.c_str());
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("logit std 4 measured") != std::string::npos);
  CHECK(r.out.find("/lstd4") != std::string::npos);
  const auto both = runFa4jit("tune --auto --predict --calibration x.cal --logit-std 2", Stderr::Merge);
  CHECK(both.status != 0);
}
