// Manifests round-trip, and a flipped bit anywhere in one is caught by its self hash.
#include "fa4jit/cache/manifest.h"
#include "fa4jit/cache/sha256.h"

#include <catch2/catch.hpp>

using namespace fa4jit::cache;

namespace {
Manifest sample() {
  Manifest m;
  m.schema = 1;
  m.key = sha256Hex("key");
  m.writer_version = "0.1.0";
  m.created_unix_seconds = 1700000000;
  m.files = {{"kernel.cubin", 1234, sha256Hex("cubin")}, {"spec.json", 10, sha256Hex("spec")}};
  m.key_parts = {{"schema", "1"}, {"target", "sm_100a"}};
  return m;
}
} // namespace

TEST_CASE("a manifest round-trips", "[cache]") {
  llvm::Expected<Manifest> back = parseManifest(serializeManifest(sample()));
  REQUIRE(static_cast<bool>(back));
  Manifest m = sample();
  CHECK(back->schema == m.schema);
  CHECK(back->key == m.key);
  CHECK(back->writer_version == m.writer_version);
  CHECK(back->created_unix_seconds == m.created_unix_seconds);
  REQUIRE(back->files.size() == 2);
  CHECK(back->files[0].name == "kernel.cubin");
  CHECK(back->files[0].size == 1234);
  CHECK(back->files[1].sha256 == sha256Hex("spec"));
  CHECK(back->key_parts == m.key_parts);
}

TEST_CASE("every single-bit flip in a manifest is detected", "[cache]") {
  std::string text = serializeManifest(sample());
  for (size_t i = 0; i < text.size(); ++i) {
    std::string damaged = text;
    damaged[i] = char(damaged[i] ^ 0x01);
    llvm::Expected<Manifest> parsed = parseManifest(damaged);
    INFO("offset " << i);
    CHECK_FALSE(static_cast<bool>(parsed));
    llvm::consumeError(parsed.takeError());
  }
}

TEST_CASE("a manifest with a file name outside the allowed set is rejected", "[cache]") {
  Manifest m = sample();
  m.files[0].name = "../escape";
  llvm::Expected<Manifest> parsed = parseManifest(serializeManifest(m));
  REQUIRE_FALSE(static_cast<bool>(parsed));
  CHECK_THAT(llvm::toString(parsed.takeError()), Catch::Contains("../escape"));
}

TEST_CASE("a manifest of deep nesting with a correct self hash is corrupt, not a crash", "[cache][json]") {
  const std::string zeros(64, '0');
  std::string text = "{\"key_parts\":" + std::string(100000, '[') + ",\"self_sha256\":\"" + zeros + "\"}";
  const std::string hash = fa4jit::cache::sha256Hex(text);
  text.replace(text.find(zeros), 64, hash);
  auto m = fa4jit::cache::parseManifest(text);
  REQUIRE_FALSE(static_cast<bool>(m));
  CHECK_THAT(llvm::toString(m.takeError()), Catch::Contains("nested deeper"));
}
