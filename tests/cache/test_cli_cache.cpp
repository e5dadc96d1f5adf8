// `fa4jit cache ...` run as a user would: FA4JIT_CACHE_DIR points at a scratch cache, output is
// checked as JSON, and verify's exit status reports damage.
#include "cache_test_util.h"

#include "llvm/Support/JSON.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <sys/wait.h>

using namespace fa4jit::cache;
using namespace fa4jit::cache::test;

namespace {

struct CliResult {
  int status = -1;
  std::string out;
};

CliResult runCli(const std::string &root, const std::string &args) {
  std::string command = "env -u FA4JIT_SYSTEM_CACHE_DIR -u FA4JIT_DISABLE_CACHE FA4JIT_CACHE_DIR='" + root + "' '" +
                        std::string(FA4JIT_CLI) + "' cache " + args + " 2>/dev/null";
  CliResult r;
  FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return r;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    r.out.append(buffer, n);
  int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

llvm::json::Value parse(const CliResult &r) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(r.out);
  if (!v) {
    FAIL_CHECK("not JSON: " << llvm::toString(v.takeError()) << "\n" << r.out);
    return nullptr;
  }
  return std::move(*v);
}

} // namespace

TEST_CASE("fa4jit cache: ls, stat, verify, prune and clear with --json", "[cache][cli]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  {
    auto cache = KernelCache::open(userConfig(root));
    for (const char *name : {"one", "two", "three"})
      REQUIRE(static_cast<bool>(cache->publish(sampleKey(name), sampleFiles(name))));
  }

  CliResult ls = runCli(root, "ls --json");
  CHECK(ls.status == 0);
  llvm::json::Value entries = parse(ls);
  REQUIRE(entries.getAsArray());
  CHECK(entries.getAsArray()->size() == 3);
  const llvm::json::Object *first = (*entries.getAsArray())[0].getAsObject();
  REQUIRE(first);
  CHECK(first->getString("layer") == llvm::StringRef("user"));
  CHECK(first->getObject("key_parts")->getString("target") == llvm::StringRef("sm_100a"));
  // The listing names each entry's kernel.
  CliResult text = runCli(root, "ls");
  CHECK(text.status == 0);
  CHECK(text.out.find("KERNEL") != std::string::npos);
  for (const char *name : {"one", "two", "three"})
    CHECK(text.out.find(std::string("fa4jit_test_") + name) != std::string::npos);

  CliResult stat = runCli(root, "stat --json");
  CHECK(stat.status == 0);
  llvm::json::Value st = parse(stat);
  REQUIRE(st.getAsObject());
  CHECK(st.getAsObject()->getString("mode") == llvm::StringRef("disk"));
  CHECK(st.getAsObject()->getObject("user")->getInteger("entries").getValueOr(-1) == 3);
  CHECK(st.getAsObject()->getObject("user")->getString("dir") == llvm::StringRef(root));

  CliResult good = runCli(root, "verify --json");
  CHECK(good.status == 0);
  llvm::json::Value goodReport = parse(good);
  REQUIRE(goodReport.getAsObject());
  CHECK(goodReport.getAsObject()->getBoolean("ok") == true);

  flipByte(entryPath(root, sampleKey("two").digest) + "/kernel.cubin", 9);
  CliResult bad = runCli(root, "verify --json");
  CHECK(bad.status == 1);
  llvm::json::Value badReport = parse(bad);
  REQUIRE(badReport.getAsObject());
  CHECK(badReport.getAsObject()->getBoolean("ok") == false);
  REQUIRE(badReport.getAsObject()->getArray("bad")->size() == 1);
  CHECK((*badReport.getAsObject()->getArray("bad"))[0].getAsObject()->getString("key") ==
        llvm::StringRef(sampleKey("two").digest));
  CHECK(runCli(root, "verify").status == 1); // the human form reports it too

  CHECK(runCli(root, "verify --fix --json").status == 1);
  CHECK(runCli(root, "verify --json").status == 0);

  CliResult prune = runCli(root, "prune --max-bytes 0 --json");
  CHECK(prune.status == 0);
  llvm::json::Value pr = parse(prune);
  REQUIRE(pr.getAsObject());
  CHECK(pr.getAsObject()->getInteger("entries_removed").getValueOr(-1) == 2);
  CHECK(pr.getAsObject()->getInteger("entries_after").getValueOr(-1) == 0);

  REQUIRE(static_cast<bool>(KernelCache::open(userConfig(root))->publish(sampleKey("four"), sampleFiles("four"))));
  CliResult clear = runCli(root, "clear --json");
  CHECK(clear.status == 0);
  llvm::json::Value cleared = parse(clear);
  REQUIRE(cleared.getAsObject());
  CHECK(cleared.getAsObject()->getInteger("entries_removed").getValueOr(-1) == 1);
  llvm::json::Value empty = parse(runCli(root, "ls --json"));
  REQUIRE(empty.getAsArray());
  CHECK(empty.getAsArray()->empty());
}

TEST_CASE("fa4jit cache: help, usage errors and a refused directory", "[cache][cli]") {
  ScratchDir dir;
  std::string root = dir.sub("cache");
  for (const char *op : {"ls", "stat", "verify", "prune", "clear"}) {
    CliResult help = runCli(root, std::string(op) + " --help");
    INFO(op);
    CHECK(help.status == 0);
    CHECK_THAT(help.out, Catch::Contains(std::string("fa4jit cache ") + op));
  }
  CHECK(runCli(root, "--help").status == 0);
  CHECK(runCli(root, "").status == 2);
  CHECK(runCli(root, "bogus").status == 2);
  CHECK(runCli(root, "prune --max-bytes lots").status == 2);
  CHECK(runCli(root, "ls --max-bytes 1").status == 2);
  CliResult human = runCli(root, "prune --max-bytes 10M");
  CHECK(human.status == 0);
  CHECK_THAT(human.out, Catch::Contains("removed 0 entries"));

  REQUIRE(::chmod(root.c_str(), 0777) == 0);
  CHECK(runCli(root, "ls").status == 1);
  CHECK(runCli(root, "verify").status == 1);
  CliResult st = runCli(root, "stat --json");
  CHECK(st.status == 0);
  llvm::json::Value refused = parse(st);
  REQUIRE(refused.getAsObject());
  CHECK(refused.getAsObject()->getString("mode") == llvm::StringRef("memory"));
  CHECK_THAT(refused.getAsObject()->getString("degraded_reason").getValueOr("").str(),
             Catch::Contains("writable by group"));
}
