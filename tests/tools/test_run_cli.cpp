// Runs `fa4jit run --json` (FA4JIT_CLI) as a user would: one JSON object in which what the run did
// not measure is null. Without a GPU (CI) the run compiles for sm_90a and reports the CPU model.
#include "cli_run.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"

TEST_CASE("run --json: one object, null where nothing was measured", "[cli][run]") {
  const std::string cache = "/tmp/fa4jit_test_run_" + std::to_string(getpid());
  ::setenv("FA4JIT_CACHE_DIR", cache.c_str(), 1);
  const auto r = fa4jit::testing::runFa4jit("run --json --batch 1 --heads 2 --seqlen 256 --rows 8 --seed 5");
  llvm::sys::fs::remove_directories(cache);
  INFO(r.out);
  REQUIRE(r.status == 0);
  auto v = llvm::json::parse(r.out);
  if (!v)
    FAIL(llvm::toString(v.takeError()));
  const llvm::json::Object *o = v->getAsObject();
  REQUIRE(o != nullptr);
  CHECK(o->getString("kernel").getValueOr("").startswith("fa4jit_attn_directp_d128"));
  CHECK(o->getString("route") == llvm::StringRef("directp"));
  CHECK(o->getInteger("seqlen_q").getValueOr(0) == 256);
  CHECK(o->getInteger("seed").getValueOr(0) == 5);
  CHECK(o->getInteger("registers").getValueOr(0) > 0);
  CHECK(o->getInteger("spill_bytes").getValueOr(-1) == 0);
  CHECK(o->getString("cache_layer") == llvm::StringRef("produced")); // (a fresh cache)
  CHECK(o->getNumber("compile_s").getValueOr(0) > 0);
  const double model_cos = o->getNumber("model_cos_vs_fp64").getValueOr(0);
  CHECK(model_cos > 0.9);
  CHECK(model_cos <= 1.0);
  if (o->getBoolean("gpu").getValueOr(false)) {
    CHECK(o->getNumber("ms").getValueOr(0) > 0);
    CHECK(o->getString("device").hasValue());
    CHECK(o->getNumber("cos_vs_fp64").getValueOr(0) > 0.9);
  } else {
    for (const char *missing : {"ms", "tflops", "device", "cos_vs_fp64", "rel_l2_vs_model"}) {
      INFO(missing);
      REQUIRE(o->get(missing) != nullptr);
      CHECK(o->get(missing)->kind() == llvm::json::Value::Null);
    }
    CHECK(!o->getString("no_gpu_reason").getValueOr("").empty());
  }
}

TEST_CASE("run: a flag or value it cannot take is a usage error (exit 2), naming it", "[cli][run]") {
  const struct {
    const char *args, *named;
  } cases[] = {
      {"run --route fp4", "fp4"},           {"run --head-dim 96", "96"},
      {"run --heads 3 --kv-heads 2", "--heads 3"}, {"run --batch 0", "--batch"},
      {"run --seed x", "--seed"},           {"run --no-such-flag", "--no-such-flag"},
  };
  for (const auto &c : cases) {
    INFO(c.args);
    const auto r = fa4jit::testing::runFa4jit(c.args, fa4jit::testing::Stderr::Merge);
    CHECK(r.status == 2);
    CHECK(r.out.find(c.named) != std::string::npos);
  }
}

TEST_CASE("every subcommand exits 2 on a flag or value it cannot take, before any work", "[cli]") {
  for (const char *args :
       {"bench --head-dims 96", "bench --causal 2", "bench --routes fp4", "bench --bogus", "tune --threads -1",
        "tune --head-dims 96", "tune --causal 3", "tune --routes x", "compile --causal 2", "compile --threads -1",
        "compile --head-dim ,,,", "accuracy --sigma x", "accuracy --bogus", "tmem --head-dim 96", "emit --route foo",
        "jit-bench --bogus", "cache ls --bogus", "cache prune --max-bytes x", "run --head-dim 96"}) {
    INFO(args);
    CHECK(fa4jit::testing::runFa4jit(args).status == 2);
  }
}
