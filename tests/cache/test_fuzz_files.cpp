// Robustness of every parser of a file fa4jit reads (cache manifests, tuning databases, kernel
// specs, calibration scores): thousands of mutated copies of a valid file, each either refused
// with a message or parsed into something that serializes and parses again. Under the sanitizer
// build (the README's test command runs it too) a read out of bounds or undefined behaviour fails
// the run. The seeds are fixed, so a failure reproduces; each parser prints its tally.
#include "cache_test_util.h"

#include "fa4jit/cache/cache_version.h"
#include "fa4jit/cache/manifest.h"
#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/codegen/candidates.h"
#include "fa4jit/codegen/classifier_fit.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <functional>
#include <random>
#include <string>

using namespace fa4jit;
using namespace fa4jit::cache;

namespace {

// One random edit of `text`: a byte changed, a span deleted or repeated, the text cut, a JSON
// token or extreme number inserted, or the whole wrapped in deep nesting.
std::string mutate(const std::string &text, std::mt19937_64 &rng) {
  static const char *const kTokens[] = {"{", "}", "[", "]", "\"", ",", ":", "null", "true", "-", "1e999", "-1e-400",
                                        "9223372036854775808", "-0", "NaN", "\\u0000", "\\ud800", "\xff", "\n", " "};
  std::string s = text;
  const auto at = [&](std::size_t n) { return n ? std::size_t(rng() % n) : 0; };
  switch (rng() % 7) {
  case 0:
    if (!s.empty())
      s[at(s.size())] = char(rng() % 256);
    break;
  case 1: {
    const std::size_t i = at(s.size()), n = std::min<std::size_t>(s.size() - i, 1 + rng() % 32);
    s.erase(i, n);
    break;
  }
  case 2: {
    const std::size_t i = at(s.size()), n = std::min<std::size_t>(s.size() - i, 1 + rng() % 64);
    s.insert(at(s.size()), s.substr(i, n));
    break;
  }
  case 3:
    s.resize(at(s.size()));
    break;
  case 4:
  case 5:
    s.insert(at(s.size() + 1), kTokens[rng() % (sizeof kTokens / sizeof *kTokens)]);
    break;
  default: {
    const std::size_t depth = 1 + rng() % 5000;
    s = std::string(depth, '[') + s + std::string(rng() % 2 ? depth : 0, ']');
    break;
  }
  }
  return s;
}

struct Tally {
  int trials = 0, parsed = 0, refused = 0, unstable = 0;
};

// `parse` returns "" when it refused the text with a message, "ok" when it parsed the text and its
// serialization parsed again, anything else when that second parse failed.
Tally fuzz(const char *what, const std::string &seed_text, uint64_t seed, int trials,
           const std::function<std::string(const std::string &)> &parse) {
  REQUIRE(parse(seed_text) == "ok"); // (the seed itself is valid)
  std::mt19937_64 rng(seed);
  Tally t;
  for (int i = 0; i < trials; ++i) {
    std::string text = mutate(seed_text, rng);
    if (rng() % 3 == 0)
      text = mutate(text, rng); // (two edits)
    const std::string outcome = parse(text);
    ++t.trials;
    if (outcome.empty()) {
      ++t.refused;
    } else if (outcome == "ok") {
      ++t.parsed;
    } else {
      ++t.unstable;
      UNSCOPED_INFO(what << " trial " << i << ": " << outcome);
    }
  }
  std::printf("fuzz %-12s %5d trials: %5d refused with a message, %5d parsed, %d unstable, 0 crashes\n", what,
              t.trials, t.refused, t.parsed, t.unstable);
  return t;
}

// Refused with a non-empty message -> "", parsed -> the callback's verdict.
template <class T, class Then> std::string verdict(llvm::Expected<T> r, Then &&then) {
  if (!r) {
    const std::string message = llvm::toString(r.takeError());
    return message.empty() ? "refused without a message" : "";
  }
  return then(*r);
}

constexpr int kTrials = 10000;

} // namespace

TEST_CASE("fuzzed cache manifests are refused or parsed, never crash", "[cache][fuzz]") {
  Manifest m;
  m.schema = schemaVersion();
  m.key = std::string(64, 'a');
  m.writer_version = "0.1.0";
  m.created_unix_seconds = 1790000000;
  m.key_parts = {{"kernel", "fa4jit_attn_directp_d128_c0_79f46d88"}, {"target", "sm_90a"}};
  m.files = {{"kernel.cubin", 1234, std::string(64, 'b')}, {"kernel.cu", 99, std::string(64, 'c')}};
  const Tally t = fuzz("manifest", serializeManifest(m), 1, kTrials, [](const std::string &text) {
    return verdict(parseManifest(text), [](const Manifest &back) {
      return parseManifest(serializeManifest(back)) ? std::string("ok") : std::string("re-serialized form refused");
    });
  });
  CHECK(t.unstable == 0);
  CHECK(t.refused > 0);
}

TEST_CASE("fuzzed tuning databases are refused or parsed, never crash", "[cache][fuzz]") {
  TuningFile f;
  f.device_name = "NVIDIA H200";
  f.sm_count = 132;
  TuningRecord r;
  r.key = {KernelFamily::AttentionForward, Target::Sm90a, Route::DirectP, 128, false, 4096};
  r.identity = {"NVIDIA H200", 132, "13.0", "13.0.88", "0.1.0"};
  const KernelSpec spec = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  r.candidates = {{spec, candidateLabel(spec), true, 1.5, 1.4, 1.7, 20, 0.01, "", 0.973}};
  r.heuristic = 0, r.winner = 0, r.tie_band = 0.02;
  r.timing_source = "fuzz", r.problem = "b8 hq16 hkv16 sq4096 sk4096", r.tuned_at = "2026-12-01T00:00:00Z";
  f.records[r.key.str()] = r;
  const Tally t = fuzz("tuning file", serializeTuningFile(f), 2, kTrials, [](const std::string &text) {
    return verdict(parseTuningFile(text, "fuzz.json"), [](const TuningFile &back) {
      return parseTuningFile(serializeTuningFile(back), "again.json") ? std::string("ok")
                                                                       : std::string("re-serialized form refused");
    });
  });
  CHECK(t.unstable == 0);
  CHECK(t.refused > 0);
}

TEST_CASE("fuzzed kernel specs are refused or parsed, never crash", "[codegen][fuzz]") {
  const KernelSpec spec = defaultAttentionSpec(Route::Nvfp8, 256, true, Target::Sm90a);
  const Tally t = fuzz("spec", toJson(spec, 2), 3, kTrials, [](const std::string &text) {
    return verdict(parseSpec(text), [](const KernelSpec &back) {
      return parseSpec(toJson(back)) ? std::string("ok") : std::string("re-serialized form refused");
    });
  });
  CHECK(t.unstable == 0);
  CHECK(t.refused > 0);
}

TEST_CASE("fuzzed calibration files are refused or parsed, never crash", "[codegen][fuzz]") {
  const std::string text = "fa4jit-calibration 1\nseqlen 4\nhead_dim 64\n\nscores\n"
                           "1.5 -2 0.25 -inf  # a masked key\n0 1e1 -3.5 2\n-1 0.5 0.5 3\n2 2 -2 -0.75\n";
  const Tally t = fuzz("calibration", text, 4, kTrials, [](const std::string &input) {
    return verdict(fit::parseCalibrationScores(input, "fuzz.txt"),
                   [](const fit::CalibrationScores &) { return std::string("ok"); });
  });
  CHECK(t.unstable == 0);
  CHECK(t.refused > 0);
}
