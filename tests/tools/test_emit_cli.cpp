// Runs `fa4jit emit` (FA4JIT_CLI) as a user would: source, --json, --spec round trip, errors.
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"

#include "cli_run.h"

#include <catch2/catch.hpp>
#include <llvm/Support/JSON.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

using Run = fa4jit::testing::CliRun;

Run emitCli(const std::string &args) {
  return fa4jit::testing::runFa4jit("emit " + args, fa4jit::testing::Stderr::Discard);
}

} // namespace

TEST_CASE("emit prints exactly the library's source for the flags' spec", "[cli][emit]") {
  Run r = emitCli("--family quantize --format mxfp4 --head-dim 64 --permute-keys --target sm_100a");
  REQUIRE(r.status == 0);
  llvm::Expected<fa4jit::EmittedKernel> k =
      fa4jit::emitKernel(fa4jit::defaultQuantizeSpec(fa4jit::QuantFormat::Mxfp4, 64, fa4jit::Target::Sm100a, false, true));
  REQUIRE(static_cast<bool>(k));
  CHECK(r.out == k->source);
}

TEST_CASE("emit --json round-trips through --spec", "[cli][emit]") {
  Run j = emitCli("--family quantize --format fp8 --head-dim 256 --fp32-input --json");
  REQUIRE(j.status == 0);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(j.out);
  REQUIRE(static_cast<bool>(v));
  const llvm::json::Object *o = v->getAsObject();
  REQUIRE(o != nullptr);
  CHECK(o->getString("kernel").getValueOr("").startswith("fa4jit_quant_fp8_d256_"));
  REQUIRE(o->getArray("baked") != nullptr);
  REQUIRE(o->getArray("runtime") != nullptr);
  REQUIRE(o->getArray("entries") != nullptr);
  CHECK(o->getArray("entries")->size() == 3); // the amax and encode passes, and the one-pass cluster kernel
  const llvm::json::Value *spec = o->get("spec");
  REQUIRE(spec != nullptr);
  std::string text;
  llvm::raw_string_ostream(text) << *spec;
  const std::string path = std::string(FA4JIT_BINARY_DIR) + "/emit_cli_spec.json";
  std::ofstream(path) << text;
  Run from_file = emitCli("--spec " + path);
  Run from_flags = emitCli("--family quantize --format fp8 --head-dim 256 --fp32-input");
  REQUIRE(from_file.status == 0);
  CHECK(from_file.out == from_flags.out);
  std::remove(path.c_str());
}

TEST_CASE("emit rejects bad flags and invalid specs", "[cli][emit]") {
  CHECK(emitCli("--route fp4").status == 2);
  CHECK(emitCli("--no-such-flag").status == 2);
  CHECK(emitCli("--spec /nonexistent.json").status == 2);
  CHECK(emitCli("--block-n 40").status == 1);                     // validation error
  CHECK(emitCli("--family quantize --format bf16").status == 1); // nothing to quantize
  Run help = emitCli("--help");
  CHECK(help.status == 0);
  CHECK(help.out.find("usage: fa4jit emit") != std::string::npos);
}

TEST_CASE("emit --mma moves the backward to that pass's own default tiles", "[cli][emit]") {
  for (const char *mma : {"mma-sync", "wgmma"}) {
    INFO(mma);
    Run j = emitCli(std::string("--family attention-backward --head-dim 128 --json --mma ") + mma);
    REQUIRE(j.status == 0);
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(j.out);
    REQUIRE(static_cast<bool>(v));
    const llvm::json::Object *b = v->getAsObject()->getObject("spec")->getObject("backward");
    REQUIRE(b != nullptr);
    CHECK(b->getString("mma").getValueOr("") == mma);
    fa4jit::KernelSpec want = fa4jit::withBackwardMma(
        fa4jit::defaultBackwardSpec(128, false, 0.0f, fa4jit::Target::Sm90a),
        std::string(mma) == "wgmma" ? fa4jit::BackwardMma::Wgmma : fa4jit::BackwardMma::MmaSync);
    CHECK(b->getInteger("block_m").getValueOr(0) == want.backward.tile.block_m);
    CHECK(b->getInteger("warps").getValueOr(0) == want.backward.tile.warps);
  }
  // (the mma.sync pass cannot hold D128 at the wgmma pass's 64 query rows)
  CHECK(fa4jit::withBackwardMma(fa4jit::defaultBackwardSpec(128, false, 0.0f, fa4jit::Target::Sm90a),
                                fa4jit::BackwardMma::MmaSync)
            .backward.tile.block_m < 64);
}
