// Runs `fa4jit tmem` (FA4JIT_CLI) as a user would.
#include "cli_run.h"

#include <catch2/catch.hpp>

#include <llvm/Support/JSON.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using Run = fa4jit::testing::CliRun;

Run tmemCli(const std::string &args) {
  return fa4jit::testing::runFa4jit("tmem " + args, fa4jit::testing::Stderr::Discard);
}

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

long integer(const llvm::json::Object &o, const char *key) { return o.getInteger(key).getValueOr(-1); }
bool boolean(const llvm::json::Object &o, const char *key, bool otherwise) { return o.getBoolean(key).getValueOr(otherwise); }
std::string string(const llvm::json::Object &o, const char *key) { return o.getString(key).getValueOr("").str(); }

} // namespace

TEST_CASE("tmem --json: D128 x 2 fills 512 columns, no window", "[cli][tmem]") {
  Run r = tmemCli("--route directp --head-dim 128 --q-tiles 2 --json");
  REQUIRE(r.status == 0);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(r.out);
  REQUIRE(static_cast<bool>(v));
  const llvm::json::Object *o = v->getAsObject();
  REQUIRE(o != nullptr);
  for (const char *key : {"route", "head_dim", "q_tiles", "block_n", "fits", "rejected_reason", "used_columns",
                          "allocation_columns", "spare_columns", "regions", "windows", "notes"})
    CHECK(o->get(key) != nullptr);
  CHECK(integer(*o, "allocation_columns") == 512);
  CHECK(integer(*o, "used_columns") == 512);
  CHECK(boolean(*o, "fits", false));
  const llvm::json::Array *regions = o->getArray("regions");
  REQUIRE(regions != nullptr);
  bool saw_o1 = false;
  for (const llvm::json::Value &reg : *regions) {
    const llvm::json::Object *x = reg.getAsObject();
    REQUIRE(x != nullptr);
    for (const char *key : {"name", "first_column", "columns", "lanes", "kind", "aliases"})
      CHECK(x->get(key) != nullptr);
    if (string(*x, "name") == "O1") {
      saw_o1 = true;
      CHECK(integer(*x, "first_column") == 384);
      CHECK(integer(*x, "columns") == 128);
    }
  }
  CHECK(saw_o1);
  const llvm::json::Array *windows = o->getArray("windows");
  REQUIRE(windows != nullptr);
  REQUIRE(!windows->empty());
  CHECK_FALSE(boolean(*(*windows)[0].getAsObject(), "open", true));
}

TEST_CASE("tmem table shows the map, a bar of 512 columns and the window verdict", "[cli][tmem]") {
  Run d64 = tmemCli("--route bf16 --head-dim 64 --q-tiles 2");
  REQUIRE(d64.status == 0);
  CHECK(d64.out.find("O1") != std::string::npos);
  CHECK(d64.out.find("320-383") != std::string::npos);
  CHECK(d64.out.find("OPEN") != std::string::npos);
  // The bar: 64 characters of 8 columns each between brackets.
  CHECK(d64.out.find("[" + std::string(32, 'S') + std::string(16, 'O') + std::string(16, '.') + "]") !=
        std::string::npos);
  Run d128 = tmemCli("--route bf16 --head-dim 128 --q-tiles 2");
  REQUIRE(d128.status == 0);
  CHECK(d128.out.find("closed") != std::string::npos);
  CHECK(d128.out.find("what would open it") != std::string::npos);
}

TEST_CASE("tmem --svg writes a well-formed drawing with a rect per region", "[cli][tmem]") {
  const std::string path = "/tmp/fa4jit_test_tmem_" + std::to_string(getpid()) + ".svg";
  Run r = tmemCli("--route directp --head-dim 128 --q-tiles 2 --json --svg " + path);
  REQUIRE(r.status == 0);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(r.out);
  REQUIRE(static_cast<bool>(v));
  const size_t regions = v->getAsObject()->getArray("regions")->size();
  std::ifstream f(path);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string svg = ss.str();
  std::remove(path.c_str());
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<svg") == 1);
  CHECK(count(svg, "class=\"region\"") == static_cast<int>(regions));
  for (const char *name : {"S0", "S1", "O0", "O1", "P0", "P1", "SFQ0"})
    CHECK(svg.find(std::string("data-name=\"") + name + "\"") != std::string::npos);
  // Every opened element is closed: a cheap well-formedness check without an XML parser.
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(count(svg, "<title>") == count(svg, "</title>"));
  CHECK(svg.find('&') == svg.find("&amp;")); // no bare ampersands (none expected at all)
}

TEST_CASE("tmem rejects what does not fit (exit 1) and bad input (exit 2)", "[cli][tmem]") {
  Run d256 = tmemCli("--route directp --head-dim 256 --q-tiles 2");
  CHECK(d256.status == 1);
  CHECK(d256.out.find("REJECTED") != std::string::npos);
  CHECK(d256.out.find("by 256") != std::string::npos);
  CHECK(tmemCli("--route directp --head-dim 96 --q-tiles 2").status == 2);
  CHECK(tmemCli("--route fp4 --head-dim 128").status == 2);
  CHECK(tmemCli("--route bf16 --head-dim 128 --block-n 48").status == 2);
  CHECK(tmemCli("--route bf16").status == 2);
  Run help = tmemCli("--help");
  CHECK(help.status == 0);
  CHECK(help.out.find("--head-dim") != std::string::npos);
}
