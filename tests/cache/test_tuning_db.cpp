// Tuning database: format round trip, persistence, bucketing keys, identity and schema checks,
// corrupt files (one warning), the system layer, atomic publish and real processes racing.
#include "cache_test_util.h"
#include "expected_checks.h"

#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/codegen/candidates.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"

#include "llvm/Support/JSON.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace fa4jit;
using namespace fa4jit::cache;
using fa4jit::cache::test::ScratchDir;
using fa4jit::cache::test::WarningCounter;

namespace {

TuningIdentity identity(const std::string &nvrtc = "13.0.88 build-x", const std::string &driver = "13.0") {
  return {"NVIDIA H200", 132, driver, nvrtc, "0.1.0"};
}

TuningKey key(int bucket, Route route = Route::DirectP, int d = 128, bool causal = false) {
  return {KernelFamily::AttentionForward, Target::Sm90a, route, d, causal, bucket};
}

// A record with three candidates: the heuristic, a faster one (the winner) and a failed one.
TuningRecord record(const TuningKey &k, int winner_block_n = 128) {
  TuningRecord r;
  r.key = k;
  KernelSpec h = defaultAttentionSpec(k.route, k.head_dim, k.causal, k.target);
  h = withAttentionSchedule(h, AttentionSchedule::MmaSync);
  KernelSpec w = h;
  w.attention.tile.shape.block_n = winner_block_n;
  w.attention.classifier.kind = ClassifierKind::Affine;
  w.attention.classifier.alpha = 2.25f;
  w.attention.classifier.beta = 1.125f;
  CandidateResult ch{h, candidateLabel(h), true, 1.5, 1.4, 1.7, 20, 0.01, "", 0.973};
  CandidateResult cw{w, candidateLabel(w), true, 1.25, 1.2, 1.3, 20, 0.015, "", std::nullopt};
  CandidateResult cf;
  cf.spec = h;
  cf.spec.attention.tile.shape.warps = 8;
  cf.spec.attention.tile.shape.block_m = 128;
  cf.label = candidateLabel(cf.spec);
  cf.error = "compile: ptxas error: too many resources requested\nsecond line";
  r.candidates = {ch, cw, cf};
  r.pruned = {{"mma m64 n256 w4", "registers: ~304 per thread > 255"}};
  r.heuristic = 0;
  r.winner = 1;
  r.tie_band = 0.02;
  r.timing_source = "fake";
  r.problem = "b8 hq16 hkv16 sq4096 sk4096";
  r.tuned_at = "2026-11-29T12:00:00Z";
  return r;
}

std::string userDirOf(const ScratchDir &s) { return s.sub("tuning"); }

} // namespace

TEST_CASE("tuning file round trip keeps specs, timings, failures and cosines", "[tuning]") {
  TuningFile f;
  f.device_name = "NVIDIA H200";
  f.sm_count = 132;
  TuningRecord r = record(key(4096));
  r.identity = identity();
  f.records[r.key.str()] = r;
  const std::string text = serializeTuningFile(f);
  auto back = parseTuningFile(text, "mem.json");
  REQUIRE_OK(back);
  REQUIRE(back->records.size() == 1);
  const TuningRecord &b = back->records.begin()->second;
  CHECK(b.key.str() == "attention/sm_90a/directp/d128/c0/s4096");
  REQUIRE(b.candidates.size() == 3);
  for (size_t i = 0; i < 3; ++i)
    CHECK(specsEqual(canonicalize(b.candidates[i].spec), canonicalize(r.candidates[i].spec)));
  CHECK(b.winnerResult().median_ms == 1.25);
  CHECK(b.candidates[0].cosine.value_or(0) == 0.973);
  CHECK_FALSE(b.candidates[1].cosine.has_value());
  CHECK_FALSE(b.candidates[2].ok);
  CHECK(std::isinf(b.candidates[2].median_ms));
  CHECK(b.candidates[2].error == r.candidates[2].error);
  CHECK(b.pruned.at(0).reason == r.pruned[0].reason);
  CHECK(b.identity.nvrtc == "13.0.88 build-x");
  CHECK(serializeTuningFile(*back) == text); // stable: re-writing what was read changes nothing
}

TEST_CASE("sequence lengths share a record per power-of-two bucket", "[tuning]") {
  CHECK(seqlenBucket(1) == 1);
  CHECK(seqlenBucket(1000) == 1024);
  CHECK(seqlenBucket(1024) == 1024);
  CHECK(seqlenBucket(1025) == 2048);
  CHECK(seqlenBucket(32768) == 32768);
  ScratchDir dir;
  TuningDb db({userDirOf(dir), "", true}, identity());
  REQUIRE_SUCCESS(db.store(record(key(seqlenBucket(3000)))));
  CHECK(db.lookup(key(seqlenBucket(2049))).has_value());
  CHECK(db.lookup(key(seqlenBucket(4096))).has_value());
  CHECK_FALSE(db.lookup(key(seqlenBucket(4097))).has_value());
  CHECK_FALSE(db.lookup(key(seqlenBucket(2048))).has_value());
  CHECK_FALSE(db.lookup(key(4096, Route::DirectP, 128, true)).has_value()); // causal is part of the key
  CHECK_FALSE(db.lookup(key(4096, Route::Nvfp8)).has_value());
}

TEST_CASE("a stored record is found by a new database on the same directory", "[tuning]") {
  ScratchDir dir;
  {
    TuningDb db({userDirOf(dir), "", true}, identity());
    REQUIRE_SUCCESS(db.store(record(key(4096))));
    REQUIRE_SUCCESS(db.store(record(key(8192), 64)));
  }
  TuningDb again({userDirOf(dir), "", true}, identity());
  TuningLayer layer = TuningLayer::Memory;
  auto r = again.lookup(key(8192), &layer);
  REQUIRE(r.has_value());
  CHECK(layer == TuningLayer::User);
  CHECK(r->winnerResult().spec.attention.tile.shape.block_n == 64);
  auto w = again.winnerSpec(key(4096));
  REQUIRE(w.has_value());
  CHECK(w->attention.classifier.kind == ClassifierKind::Affine);
  CHECK(again.userFile() == userDirOf(dir) + "/nvidia-h200-132sm.json");
  CHECK(fa4jit::cache::test::modeOf(again.userFile()) == 0600);
  CHECK(fa4jit::cache::test::modeOf(userDirOf(dir)) == 0700);
  // Nothing but the file and its lock remain: the temporary files were renamed into place.
  CHECK(tuningFilesIn(userDirOf(dir)).size() == 1);
  std::error_code ec;
  int entries = 0;
  for (llvm::sys::fs::directory_iterator it(userDirOf(dir), ec), end; it != end && !ec; it.increment(ec))
    ++entries;
  CHECK(entries == 2); // <slug>.json and <slug>.json.lock
}

TEST_CASE("records measured under another NVRTC, fa4jit or driver are skipped", "[tuning]") {
  ScratchDir dir;
  TuningDb writer({userDirOf(dir), "", true}, identity("13.0.88 build-x", "13.0"));
  REQUIRE_SUCCESS(writer.store(record(key(4096))));
  CHECK_FALSE(TuningDb({userDirOf(dir), "", true}, identity("13.1.0 build-y", "13.0")).lookup(key(4096)));
  CHECK_FALSE(TuningDb({userDirOf(dir), "", true}, identity("13.0.88 build-x", "13.1")).lookup(key(4096)));
  CHECK(TuningDb({userDirOf(dir), "", false}, identity("13.0.88 build-x", "13.1")).lookup(key(4096)));
  TuningIdentity newer = identity();
  newer.fa4jit_version = "0.2.0";
  CHECK_FALSE(TuningDb({userDirOf(dir), "", true}, newer).lookup(key(4096)));
  // Listed, but marked stale.
  auto listed = TuningDb({userDirOf(dir), "", true}, newer).list();
  REQUIRE(listed.size() == 1);
  CHECK_FALSE(listed[0].current);
}

TEST_CASE("a file of another schema version is skipped without a warning", "[tuning]") {
  ScratchDir dir;
  TuningDb db({userDirOf(dir), "", true}, identity());
  REQUIRE_SUCCESS(db.store(record(key(4096))));
  std::string text = fa4jit::cache::test::readFile(db.userFile());
  const std::string from = "\"schema\": 1";
  // The last one is the file's (each spec has its own "schema" field, and keys are sorted).
  const size_t at = text.rfind(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), "\"schema\": 999");
  fa4jit::cache::test::writeFile(db.userFile(), text);
  auto parsed = parseTuningFile(text, "x.json");
  REQUIRE_ERR(parsed);
  llvm::Error e = parsed.takeError();
  CHECK(isSchemaMismatch(e));
  llvm::consumeError(std::move(e));
  WarningCounter warnings;
  TuningDb reader({userDirOf(dir), "", true}, identity());
  CHECK_FALSE(reader.lookup(key(4096)));
  CHECK(warnings.warnings() == 0);
}

TEST_CASE("a file that is not JSON is ignored with one warning and moved aside by the next store", "[tuning]") {
  ScratchDir dir;
  TuningDb db({userDirOf(dir), "", true}, identity());
  REQUIRE_SUCCESS(db.store(record(key(4096))));
  std::string text = fa4jit::cache::test::readFile(db.userFile());
  text.resize(text.size() / 2);
  fa4jit::cache::test::writeFile(db.userFile(), text);
  WarningCounter warnings;
  TuningDb a({userDirOf(dir), "", true}, identity());
  TuningDb b({userDirOf(dir), "", true}, identity());
  CHECK_FALSE(a.lookup(key(4096)));
  CHECK_FALSE(b.lookup(key(4096)));
  a.reload();
  CHECK_FALSE(a.lookup(key(4096)));
  CHECK(warnings.warnings() == 1);
  CHECK(warnings.last().find(db.userFile()) != std::string::npos);
  REQUIRE_SUCCESS(a.store(record(key(8192))));
  CHECK(warnings.warnings() == 2); // (the move aside, named)
  const std::string aside = warnings.last().substr(warnings.last().find(db.userFile() + ".corrupt-"));
  CHECK(fa4jit::cache::test::readFile(aside) == text); // nothing lost
  TuningDb c({userDirOf(dir), "", true}, identity());
  CHECK(c.lookup(key(8192)));
  CHECK(warnings.warnings() == 2);
}

TEST_CASE("a damaged record is ignored alone, named once, and kept in the file", "[tuning]") {
  ScratchDir dir;
  TuningDb db({userDirOf(dir), "", true}, identity());
  for (int bucket : {1024, 4096, 16384})
    REQUIRE_SUCCESS(db.store(record(key(bucket))));
  // Still valid JSON with a plausible number: only the checksums can tell which record it hit.
  std::string text = fa4jit::cache::test::readFile(db.userFile());
  const size_t s4096 = text.find("\"attention/sm_90a/directp/d128/c0/s4096\"");
  REQUIRE(s4096 != std::string::npos);
  const size_t at = text.find("\"median_ms\": 1.25", s4096);
  REQUIRE(at != std::string::npos);
  text.replace(at, 17, "\"median_ms\": 1.05");
  REQUIRE_OK(llvm::json::parse(text));
  fa4jit::cache::test::writeFile(db.userFile(), text);

  WarningCounter warnings;
  TuningDb a({userDirOf(dir), "", true}, identity());
  CHECK(a.lookup(key(1024)));
  CHECK(a.lookup(key(16384)));
  CHECK_FALSE(a.lookup(key(4096)));
  CHECK(warnings.warnings() == 1);
  CHECK_THAT(warnings.last(), Catch::Contains("s4096") && Catch::Contains("damaged") && Catch::Contains("kept"));
  std::string problem;
  auto read = readTuningFile(db.userFile(), &problem);
  REQUIRE(read);
  CHECK(read->records.size() == 2);
  CHECK(read->rejected.size() == 1);
  CHECK_THAT(problem, Catch::Contains("s4096"));

  // Another key's store keeps the good records and the damaged one, which stays rejected.
  REQUIRE_SUCCESS(a.store(record(key(65536))));
  const std::string after = fa4jit::cache::test::readFile(db.userFile());
  CHECK(after.find("1.05") != std::string::npos);
  TuningDb b({userDirOf(dir), "", true}, identity());
  CHECK(b.lookup(key(1024)));
  CHECK(b.lookup(key(16384)));
  CHECK(b.lookup(key(65536)));
  CHECK_FALSE(b.lookup(key(4096)));
  // Tuning the key again replaces it.
  REQUIRE_SUCCESS(b.store(record(key(4096), 64)));
  TuningDb c({userDirOf(dir), "", true}, identity());
  auto again = c.lookup(key(4096));
  REQUIRE(again);
  CHECK(again->winnerResult().spec.attention.tile.shape.block_n == 64);
  REQUIRE(readTuningFile(db.userFile()));
  CHECK(readTuningFile(db.userFile())->rejected.empty());
}

TEST_CASE("records whose specs fail validation or belong to another key are rejected", "[tuning]") {
  struct Case {
    const char *what;
    std::function<void(TuningRecord &)> spoil;
    const char *reason;
  };
  const Case cases[] = {
      {"block_m 1,000,000", [](TuningRecord &r) { r.candidates[1].spec.attention.tile.shape.block_m = 1000000; },
       "candidates[1].spec"},
      {"warps 99,999", [](TuningRecord &r) { r.candidates[0].spec.attention.tile.shape.warps = 99999; },
       "candidates[0].spec"},
      {"a winner of another head dim",
       [](TuningRecord &r) {
         r.candidates[1].spec = withAttentionSchedule(defaultAttentionSpec(Route::DirectP, 64, false, Target::Sm90a),
                                                      AttentionSchedule::MmaSync);
       },
       "not one for the record's key"},
  };
  for (const Case &c : cases) {
    INFO(c.what);
    TuningFile f;
    f.device_name = "NVIDIA H200";
    f.sm_count = 132;
    TuningRecord good = record(key(1024)), bad = record(key(4096));
    good.identity = bad.identity = identity();
    c.spoil(bad);
    f.records[good.key.str()] = good;
    f.records[bad.key.str()] = bad;
    auto back = parseTuningFile(serializeTuningFile(f), "mem.json"); // (checksums intact)
    REQUIRE_OK(back);
    CHECK(back->records.count(good.key.str()) == 1);
    CHECK(back->records.count(bad.key.str()) == 0);
    REQUIRE(back->rejected.count(bad.key.str()) == 1);
    CHECK_THAT(back->rejected.at(bad.key.str()).reason, Catch::Contains(c.reason));
  }
}

namespace {
TuningKey decodeKey(int cta_bucket, int seqlen_bucket, KvValueFormat value = KvValueFormat::Fp8) {
  TuningKey k;
  k.family = KernelFamily::PagedKv;
  k.head_dim = 128;
  k.page_size = 16;
  k.value_format = value;
  k.cta_bucket = cta_bucket;
  k.seqlen_bucket = seqlen_bucket;
  return k;
}

// A decode-plan record: the heuristic's plan (w8 s4) and a faster one (w4 s16), the winner.
TuningRecord decodeRecord(const TuningKey &k) {
  TuningRecord r;
  r.key = k;
  const KernelSpec w8 = defaultPagedKvSpec(k.head_dim, k.page_size, 8, k.target, k.value_format);
  const KernelSpec w4 = defaultPagedKvSpec(k.head_dim, k.page_size, 4, k.target, k.value_format);
  CandidateResult h{w8, "w8 s4", true, 0.05, 0.049, 0.052, 10, 0.01, "", std::nullopt, 4};
  CandidateResult w{w4, "w4 s16", true, 0.04, 0.039, 0.041, 10, 0.01, "", std::nullopt, 16};
  r.candidates = {h, w};
  r.heuristic = 0;
  r.winner = 1;
  r.tie_band = 0.02;
  r.timing_source = "fake";
  r.problem = "b1 hq32 hkv8 q1 ctx32768";
  r.tuned_at = "2026-12-07T06:00:00Z";
  return r;
}
} // namespace

TEST_CASE("decode-plan records keep their splits and key fields through a file", "[tuning][decode]") {
  const TuningKey k = decodeKey(8, 32768, KvValueFormat::Mxfp4);
  CHECK(k.str() == "paged-kv/sm_90a/mxfp4/d128/p16/g8/s32768");
  CHECK(decodeKey(16, 32768).str() != decodeKey(8, 32768).str());
  TuningFile f;
  f.device_name = "NVIDIA H200";
  f.sm_count = 132;
  TuningRecord r = decodeRecord(k);
  r.identity = identity();
  f.records[k.str()] = r;
  auto back = parseTuningFile(serializeTuningFile(f), "mem.json");
  REQUIRE_OK(back);
  REQUIRE(back->records.count(k.str()) == 1);
  const TuningRecord &b = back->records.at(k.str());
  CHECK(b.key.str() == k.str());
  CHECK(b.key.value_format == KvValueFormat::Mxfp4);
  CHECK(b.key.page_size == 16);
  CHECK(b.key.cta_bucket == 8);
  REQUIRE(b.candidates.size() == 2);
  CHECK(b.candidates[0].splits == 4);
  CHECK(b.winnerResult().splits == 16);
  CHECK(b.winnerResult().spec.paged.warps == 4);

  TuningDb db({"", "", true}, identity());
  REQUIRE_SUCCESS(db.store(r));
  auto winner = db.winnerDecode(k);
  REQUIRE(winner);
  CHECK(winner->splits == 16);
  CHECK(winner->spec.paged.warps == 4);
  CHECK_FALSE(db.winnerDecode(decodeKey(16, 32768, KvValueFormat::Mxfp4)));
}

TEST_CASE("decode-plan records with splits out of range or another cache's spec are rejected", "[tuning][decode]") {
  struct Case {
    const char *what;
    std::function<void(TuningRecord &)> spoil;
    const char *reason;
  };
  const Case cases[] = {
      {"17 splits", [](TuningRecord &r) { r.candidates[1].splits = 17; }, "not a decode plan"},
      {"no splits", [](TuningRecord &r) { r.candidates[0].splits = 0; }, "not a decode plan"},
      {"an attention spec", [](TuningRecord &r) { r.candidates[0].spec = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a); },
       "not a decode plan"},
      {"a winner of page size 64", [](TuningRecord &r) { r.candidates[1].spec.paged.page_size = 64; },
       "not one for the record's key"},
      {"a winner of the other V format",
       [](TuningRecord &r) { r.candidates[1].spec.paged.value_format = KvValueFormat::Mxfp4; },
       "not one for the record's key"},
  };
  for (const Case &c : cases) {
    INFO(c.what);
    TuningFile f;
    f.device_name = "NVIDIA H200";
    f.sm_count = 132;
    TuningRecord good = decodeRecord(decodeKey(4, 4096)), bad = decodeRecord(decodeKey(64, 4096));
    good.identity = bad.identity = identity();
    c.spoil(bad);
    f.records[good.key.str()] = good;
    f.records[bad.key.str()] = bad;
    auto back = parseTuningFile(serializeTuningFile(f), "mem.json");
    REQUIRE_OK(back);
    CHECK(back->records.count(good.key.str()) == 1);
    CHECK(back->records.count(bad.key.str()) == 0);
    REQUIRE(back->rejected.count(bad.key.str()) == 1);
    CHECK_THAT(back->rejected.at(bad.key.str()).reason, Catch::Contains(c.reason));
  }
}

TEST_CASE("tuning folders that others may write are refused like the kernel cache's", "[tuning]") {
  ScratchDir dir;
  const std::string user = userDirOf(dir), sys = dir.sub("system/tuning");
  {
    TuningDb writer({user, "", true}, identity());
    REQUIRE_SUCCESS(writer.store(record(key(4096))));
    TuningDb shipping({sys, "", true}, identity());
    REQUIRE_SUCCESS(shipping.store(record(key(1024))));
  }
  REQUIRE(::chmod(user.c_str(), 0777) == 0);
  REQUIRE(::chmod(sys.c_str(), 0775) == 0);
  WarningCounter warnings;
  TuningDb db({user, sys, true}, identity());
  CHECK_FALSE(db.lookup(key(4096)));
  CHECK_FALSE(db.lookup(key(1024)));
  CHECK(warnings.warnings() == 2);
  CHECK_THAT(warnings.last(), Catch::Contains("writable by group or others"));
  llvm::Error e = db.store(record(key(8192)));
  REQUIRE(static_cast<bool>(e));
  CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("writable by group or others"));
  // A tuning file that is a symbolic link is not read either.
  REQUIRE(::chmod(user.c_str(), 0700) == 0);
  const std::string file = user + "/nvidia-h200-132sm.json";
  REQUIRE(::rename(file.c_str(), (user + "/elsewhere.json").c_str()) == 0);
  REQUIRE(::symlink((user + "/elsewhere.json").c_str(), file.c_str()) == 0);
  TuningDb linked({user, "", true}, identity());
  CHECK_FALSE(linked.lookup(key(4096)));
  std::string problem; // (the path has warned already: once per file and process)
  CHECK_FALSE(readTuningFile(file, &problem));
  CHECK_THAT(problem, Catch::Contains("symbolic link"));
}

TEST_CASE("the read-only system layer is searched first and never written", "[tuning]") {
  ScratchDir dir;
  const std::string sys = dir.sub("system/tuning"), user = dir.sub("user/tuning");
  {
    TuningDb shipping({sys, "", true}, identity()); // how a deployment builds its system database
    REQUIRE_SUCCESS(shipping.store(record(key(4096), 32)));
  }
  const std::string sysFile = sys + "/nvidia-h200-132sm.json";
  const std::string before = fa4jit::cache::test::readFile(sysFile);
  TuningDb db({user, sys, true}, identity());
  REQUIRE_SUCCESS(db.store(record(key(4096), 128)));
  REQUIRE_SUCCESS(db.store(record(key(1024), 64)));
  TuningLayer layer = TuningLayer::Memory;
  auto r = db.lookup(key(4096), &layer);
  REQUIRE(r);
  CHECK(layer == TuningLayer::System);
  CHECK(r->winnerResult().spec.attention.tile.shape.block_n == 32);
  r = db.lookup(key(1024), &layer);
  REQUIRE(r);
  CHECK(layer == TuningLayer::User);
  CHECK(fa4jit::cache::test::readFile(sysFile) == before);
  CHECK(db.list().size() == 3);
}

TEST_CASE("without a user directory records live in memory", "[tuning]") {
  TuningDb db({"", "", true}, identity());
  REQUIRE_SUCCESS(db.store(record(key(256))));
  TuningLayer layer = TuningLayer::User;
  CHECK(db.lookup(key(256), &layer));
  CHECK(layer == TuningLayer::Memory);
  CHECK(db.userFile().empty());
}

TEST_CASE("a record without a timed winner is refused", "[tuning]") {
  TuningDb db({"", "", true}, identity());
  TuningRecord r = record(key(256));
  r.winner = 2; // the failed candidate
  llvm::Error e = db.store(r);
  CHECK(static_cast<bool>(e));
  CHECK(llvm::toString(std::move(e)).find("no successfully timed winner") != std::string::npos);
  CHECK_FALSE(db.lookup(key(256)));
}

TEST_CASE("eight processes storing at once lose no record", "[tuning][processes]") {
  ScratchDir dir;
  constexpr int kProcesses = 8, kRounds = 4;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int bad = 0;
      for (int round = 0; round < kRounds; ++round) {
        TuningDb db({userDirOf(dir), "", true}, identity());
        // Its own shape, and a shared one every process rewrites.
        if (llvm::Error e = db.store(record(key(1 << (p + 1), Route::DirectP, 64))))
          ++bad, llvm::consumeError(std::move(e));
        if (llvm::Error e = db.store(record(key(65536), 32 * (1 + round % 2))))
          ++bad, llvm::consumeError(std::move(e));
      }
      ::_exit(bad);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  WarningCounter warnings;
  TuningDb db({userDirOf(dir), "", true}, identity());
  for (int p = 0; p < kProcesses; ++p)
    CHECK(db.lookup(key(1 << (p + 1), Route::DirectP, 64)));
  CHECK(db.lookup(key(65536)));
  CHECK(db.list().size() == kProcesses + 1);
  CHECK(warnings.warnings() == 0);
  CHECK(tuningFilesIn(userDirOf(dir)).size() == 1); // no temporary file left behind
}

TEST_CASE("device slugs are file-name safe and distinguish SM counts", "[tuning]") {
  CHECK(deviceSlug("NVIDIA H200", 132) == "nvidia-h200-132sm");
  CHECK(deviceSlug("NVIDIA H100 80GB HBM3", 132) == "nvidia-h100-80gb-hbm3-132sm");
  CHECK(deviceSlug("NVIDIA H200", 66) != deviceSlug("NVIDIA H200", 132));
  CHECK(deviceSlug("../..", 1) == "unknown-device-1sm");
}

TEST_CASE("a tuning file of 50,000 '[' is an error, not a crash", "[cache][json]") {
  auto f = fa4jit::cache::parseTuningFile(std::string(50000, '['), "/tmp/deep.json");
  REQUIRE_FALSE(static_cast<bool>(f));
  CHECK_THAT(llvm::toString(f.takeError()), Catch::Contains("nested deeper"));
}

TEST_CASE("route-auto records keep their budget, and their winner may be any route", "[tuning][auto]") {
  TuningKey k = key(4096);
  k.route_auto = true;
  k.min_cosine = 0.985;
  k.logit_std = 16;
  CHECK(k.str() == "attention/sm_90a/auto/d128/c0/s4096/cos0.985/lstd16");
  TuningRecord r;
  r.key = k;
  const KernelSpec directp = defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a);
  KernelSpec fp8 = withQkFormat(defaultAttentionSpec(Route::Nvfp8, 128, false, Target::Sm90a), QkFormat::E4m3);
  r.candidates = {CandidateResult{directp, "directp", false, INFINITY, INFINITY, INFINITY, 0, 0,
                                  "predicted cosine 0.8666 is below min_cosine 0.985", 0.8666},
                  CandidateResult{fp8, "fp8", true, 1.1, 1.0, 1.2, 20, 0.01, "", 0.9906}};
  r.winner = 1;
  r.heuristic = 0;
  r.min_cosine = 0.985;
  r.identity = identity();
  TuningFile f;
  f.device_name = "NVIDIA H200";
  f.sm_count = 132;
  f.records[k.str()] = r;
  auto back = parseTuningFile(serializeTuningFile(f), "mem.json");
  REQUIRE_OK(back);
  REQUIRE(back->records.count(k.str()) == 1);
  CHECK(back->rejected.empty());
  const TuningRecord &b = back->records.at(k.str());
  CHECK(b.key.route_auto);
  CHECK(b.key.min_cosine == 0.985);
  CHECK(b.key.logit_std == 16);
  CHECK(b.winnerResult().spec.attention.operands.qk_format == QkFormat::E4m3);
  CHECK(*b.winnerResult().cosine == 0.9906);
  // An ordinary key is another record: the auto one never answers a route's lookup.
  CHECK(key(4096).str() != k.str());
}
