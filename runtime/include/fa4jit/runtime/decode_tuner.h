#pragma once
// Tuning decode plans (docs/TUNING.md, "Decode plans"): for one decode shape over the paged cache,
// time every plan of enumerateDecodeCandidates (decode warps x key splits), pick the fastest within
// the noise band (ties go to the heuristic's plan, then enumeration order) and store every result
// in the tuning database, where Engine::decodePlan and the next process find it.
//
// As with attention tuning, the compiler and the timing source are interfaces, so CI exercises the
// flow with fakes: DecodeTimingSource is EngineDecodeTimingSource on a GPU.
#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/codegen/decode_candidates.h"
#include "fa4jit/runtime/tuner.h"

#include <memory>
#include <string>

namespace fa4jit {
class Engine;
}

namespace fa4jit::runtime {

// The timed decode: batch sequences of `context` tokens each, `queries` new tokens per sequence.
struct DecodeTuneProblem {
  int batch = 1, q_heads = 32, kv_heads = 8, queries = 1, context = 4096;
  std::string str() const; // "b16 hq32 hkv8 q1 ctx32768"
};

// CTAs of the decode grid without splits: sequences x kv heads x 16-row blocks of a kv head's
// query rows (its GQA group x queries); Engine::decodePlan and the tuner key on its bucket.
long long decodeBaseCtas(int batch, int q_heads, int kv_heads, int queries);

// The tuning key of a decode shape (family PagedKv).
cache::TuningKey decodeTuningKey(Target target, int head_dim, int page_size, KvValueFormat value_format,
                                 long long base_ctas, int max_seq_len);

class DecodeTimingSource {
public:
  virtual ~DecodeTimingSource();
  virtual std::string describe() const = 0;
  // Times one plan (its module already compiled). An error makes the plan infinitely slow.
  virtual llvm::Expected<TimingStats> time(const KernelSpec &spec, int splits, const DecodeTuneProblem &problem) = 0;
};

struct DecodeTuneRequest {
  Target target = Target::Sm90a;
  int head_dim = 128, page_size = 16;
  KvValueFormat value_format = KvValueFormat::Fp8;
  int sm_count = 132; // for the heuristic's plan (candidate 0)
  DecodeTuneProblem problem;
};

class DecodeTuner {
public:
  DecodeTuner(cache::TuningDb &db, CandidateCompiler &compiler, DecodeTimingSource &timing)
      : db_(db), compiler_(compiler), timing_(timing) {}
  // TunerOptions' tie band, force, replay_only and progress apply (no accuracy floor: every plan
  // computes the same numbers).
  llvm::Expected<TuneOutcome> tune(const DecodeTuneRequest &request, const TunerOptions &options = {});
  static cache::TuningKey keyFor(const DecodeTuneRequest &request);

private:
  cache::TuningDb &db_;
  CandidateCompiler &compiler_;
  DecodeTimingSource &timing_;
};

// The real source: Engine::decode with the plan's spec and splits on a filled paged cache whose
// block tables rotate over at least 256 MB of distinct pages (nothing timed from L2), 20 calls
// back to back per repeat between CUDA events (launch gaps do not count for short decodes), the
// median of the repeats after warm-up.
struct DecodeTimingOptions {
  int warmup = 2;
  int reps = 10;
};
class EngineDecodeTimingSource : public DecodeTimingSource {
public:
  explicit EngineDecodeTimingSource(Engine &engine, DecodeTimingOptions options = {});
  ~EngineDecodeTimingSource() override;
  std::string describe() const override;
  llvm::Expected<TimingStats> time(const KernelSpec &spec, int splits, const DecodeTuneProblem &problem) override;

private:
  struct Inputs;
  Engine &engine_;
  DecodeTimingOptions options_;
  std::string inputs_key_;
  std::unique_ptr<Inputs> inputs_; // the last shape's (candidates of one shape share it)
};

} // namespace fa4jit::runtime
