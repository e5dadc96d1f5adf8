// Decode-plan tuning with a fake compiler and a deterministic timing source: the candidate plans
// (heuristic first, splits bounded by the context), the choice within the tie band, compile
// failures, persistence (a second tuner times nothing) and replay misses; and the shared key
// helpers Engine::decodePlan uses.
#include "expected_checks.h"
#include "tuner_fakes.h"

#include "fa4jit/codegen/decode_candidates.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/runtime/decode_tuner.h"

#include "llvm/Support/FileSystem.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <tuple>

using namespace fa4jit;
using namespace fa4jit::runtime;

namespace {

using fa4jit::testing::FakeCompiler;
using Scratch = fa4jit::testing::TunerScratch;
cache::TuningIdentity identity() { return fa4jit::testing::tunerTestIdentity(); }

class FakeDecodeTiming : public DecodeTimingSource {
public:
  std::function<double(int warps, int splits)> ms;
  std::function<double(int kv_stages)> ring_ms = [](int) { return 0.0; }; // added to ms
  int calls = 0;
  std::string describe() const override { return "fake decode"; }
  llvm::Expected<TimingStats> time(const KernelSpec &spec, int splits, const DecodeTuneProblem &) override {
    ++calls;
    const double t = ms(spec.paged.warps, splits) + ring_ms(spec.paged.kv_stages);
    if (std::isnan(t))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "CUDA_ERROR_LAUNCH_FAILED");
    return TimingStats{t, t, t, 10, 0.005};
  }
};

DecodeTuneRequest request(int batch, int context) {
  DecodeTuneRequest r;
  r.problem = {batch, 32, 8, 1, context};
  return r;
}

} // namespace

TEST_CASE("decode candidates: the heuristic's plan first, no duplicates, splits bounded by the context",
          "[tuner][decode]") {
  DecodeShape shape;
  shape.base_ctas = 8; // one sequence, 8 kv heads, one row block
  shape.max_seq_len = 32768;
  auto list = enumerateDecodeCandidates(shape);
  REQUIRE_OK(list);
  const DecodeGridChoice h = chooseDecodeGrid(8, 32768, 132);
  REQUIRE(list->heuristic == 0);
  CHECK(list->kept[0].spec.paged.warps == h.warps);
  CHECK(list->kept[0].splits == h.splits);
  CHECK(list->kept[0].spec.paged.kv_stages == 0);
  std::set<std::tuple<int, int, int>> seen;
  for (const DecodeCandidate &c : list->kept) {
    CHECK(seen.insert({c.spec.paged.warps, c.spec.paged.kv_stages, c.splits}).second);
    CHECK(c.spec.family == KernelFamily::PagedKv);
    CHECK(c.splits >= 1);
    CHECK(c.splits <= 16);
  }
  CHECK(seen.count({4, 0, 16}) == 1);
  CHECK(seen.count({8, 0, 1}) == 1);
  CHECK(seen.count({8, 3, 4}) == 1);
  CHECK(list->kept.size() == 2 * 2 * 5); // warps x staging x splits 1..16

  shape.value_format = KvValueFormat::Mxfp4; // (MXFP4 V: the heuristic's plan decodes from the ring)
  auto mx = enumerateDecodeCandidates(shape);
  REQUIRE_OK(mx);
  CHECK(mx->kept[0].spec.paged.kv_stages == 3);
  CHECK(mx->kept.size() == 2 * 2 * 5);
  shape.value_format = KvValueFormat::Fp8;

  shape.max_seq_len = 100; // at most 2 splits of >= 64 keys
  auto short_list = enumerateDecodeCandidates(shape);
  REQUIRE_OK(short_list);
  for (const DecodeCandidate &c : short_list->kept)
    CHECK(c.splits <= 2);

  shape.head_dim = 96;
  CHECK_FALSE(static_cast<bool>(enumerateDecodeCandidates(shape)));
  llvm::consumeError(enumerateDecodeCandidates(shape).takeError());
}

TEST_CASE("decode keys bucket the grid and the context; Engine::decodePlan uses the same helpers", "[tuner][decode]") {
  CHECK(decodeCtaBucket(1) == 1);
  CHECK(decodeCtaBucket(8) == 8);
  CHECK(decodeCtaBucket(9) == 16);
  // 32 query heads over 8 kv heads, 1 query: a group of 4 rows fits one 16-row block.
  CHECK(decodeBaseCtas(16, 32, 8, 1) == 16 * 8);
  // 8 queries x group 4 = 32 rows: two row blocks per kv head.
  CHECK(decodeBaseCtas(16, 32, 8, 8) == 16 * 8 * 2);
  const cache::TuningKey a = decodeTuningKey(Target::Sm90a, 128, 16, KvValueFormat::Fp8, 120, 30000);
  const cache::TuningKey b = decodeTuningKey(Target::Sm90a, 128, 16, KvValueFormat::Fp8, 128, 32768);
  CHECK(a.str() == b.str());
  CHECK(a.str() == "paged-kv/sm_90a/fp8/d128/p16/g128/s32768");
  CHECK(DecodeTuner::keyFor(request(16, 32768)).str() == b.str());
}

TEST_CASE("the decode tuner stores the fastest plan and a second tuner reads it back", "[tuner][decode]") {
  Scratch dir;
  FakeCompiler compiler;
  FakeDecodeTiming timing;
  // 4 warps with 8 splits is the fastest plan; the rest cost more the further they are from it.
  timing.ms = [](int warps, int splits) { return 0.1 + 0.01 * std::abs(std::log2(double(splits)) - 3) + (warps == 8 ? 0.02 : 0); };
  {
    cache::TuningDb db({dir.sub("tuning"), "", true}, identity());
    DecodeTuner tuner(db, compiler, timing);
    auto out = tuner.tune(request(1, 32768));
    REQUIRE_OK(out);
    CHECK_FALSE(out->from_database);
    CHECK(out->compiled == 4); // one module per warp count and staging, shared by every split count
    CHECK(out->timed == int(out->record.candidates.size()));
    CHECK(out->record.winnerResult().label == "w4 s8");
    CHECK(out->record.winnerResult().splits == 8);
    CHECK(out->record.key.family == KernelFamily::PagedKv);
  }
  const int timed_before = timing.calls, compiled_before = compiler.specs_seen;
  cache::TuningDb db2({dir.sub("tuning"), "", true}, identity());
  DecodeTuner again(db2, compiler, timing);
  auto out = again.tune(request(1, 20000)); // (same context bucket)
  REQUIRE_OK(out);
  CHECK(out->from_database);
  CHECK(timing.calls == timed_before);
  CHECK(compiler.specs_seen == compiled_before);
  auto winner = db2.winnerDecode(DecodeTuner::keyFor(request(1, 32768)));
  REQUIRE(winner);
  CHECK(winner->splits == 8);
  CHECK(winner->spec.paged.warps == 4);
}

TEST_CASE("the decode tuner: ties go to the heuristic, failures are recorded, replay misses name the command",
          "[tuner][decode]") {
  cache::TuningDb db({"", "", true}, identity());
  FakeCompiler compiler;
  FakeDecodeTiming timing;
  const DecodeGridChoice h = chooseDecodeGrid(8, 32768, 132);

  SECTION("every plan within the band: the heuristic's wins") {
    timing.ms = [](int, int) { return 0.1; };
    DecodeTuner tuner(db, compiler, timing);
    auto out = tuner.tune(request(1, 32768));
    REQUIRE_OK(out);
    CHECK(out->record.winner == 0);
    CHECK(out->record.winnerResult().splits == h.splits);
  }
  SECTION("the ring is chosen where it is faster, and its label says so") {
    timing.ms = [](int, int splits) { return splits == 8 ? 0.1 : 0.2; };
    timing.ring_ms = [](int kv_stages) { return kv_stages == 3 ? -0.05 : 0.0; };
    DecodeTuner tuner(db, compiler, timing);
    auto out = tuner.tune(request(1, 32768));
    REQUIRE_OK(out);
    CHECK(out->record.winnerResult().spec.paged.kv_stages == 3);
    CHECK(out->record.winnerResult().label.find("ring3") != std::string::npos);
    auto w = db.winnerDecode(DecodeTuner::keyFor(request(1, 32768)));
    REQUIRE(w);
    CHECK(w->spec.paged.kv_stages == 3);
  }
  SECTION("a module that does not compile fails every plan on it, with the reason") {
    compiler.fails = [](const KernelSpec &s) { return s.paged.warps == 8; };
    timing.ms = [](int warps, int) { return warps == 8 ? 0.01 : 0.1; };
    DecodeTuner tuner(db, compiler, timing);
    auto out = tuner.tune(request(1, 32768));
    REQUIRE_OK(out);
    CHECK(out->record.winnerResult().spec.paged.warps == 4);
    for (const cache::CandidateResult &c : out->record.candidates)
      if (c.spec.paged.warps == 8) {
        CHECK_FALSE(c.ok);
        CHECK_THAT(c.error, Catch::Contains("too many resources"));
      }
  }
  SECTION("every launch failing is an error naming the key") {
    timing.ms = [](int, int) { return NAN; };
    DecodeTuner tuner(db, compiler, timing);
    auto out = tuner.tune(request(1, 32768));
    REQUIRE_ERR(out);
    const std::string msg = llvm::toString(out.takeError());
    CHECK_THAT(msg, Catch::Contains("paged-kv/sm_90a/fp8/d128/p16/g8/s32768"));
    CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_LAUNCH_FAILED"));
  }
  SECTION("replay only: a miss is an error that says how to tune the shape") {
    timing.ms = [](int, int) { return 0.1; };
    DecodeTuner tuner(db, compiler, timing);
    TunerOptions opt;
    opt.replay_only = true;
    auto out = tuner.tune(request(1, 32768), opt);
    REQUIRE_ERR(out);
    const std::string msg = llvm::toString(out.takeError());
    CHECK_THAT(msg, Catch::Contains("fa4jit tune --decode --head-dim 128 --page-size 16 --value-format fp8"));
    CHECK(timing.calls == 0);
  }
}
