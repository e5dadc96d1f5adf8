#pragma once
// CPU models of the forward routes (`bf16`, `nvfp8`, `directp`): for a given AttentionSpec they
// compute exactly what docs/NUMERICS.md says the generated kernel computes (quantization of the
// operands, S per widening rule, tile-by-tile online softmax with the spec's block_n and range
// guard, Direct-P block exponents and codes, the normalizer from the fed values, the epilogue).
// Kernels are compared against these bit for bit on P codes and block exponents.
#include <climits>
#include <cstdint>
#include <vector>

#include "fa4jit/codegen/spec.h"
#include "fa4jit/cpu/tensor.h"

namespace fa4jit::cpu {

// A query row whose internals the model records.
struct TraceRow {
  int batch = 0;
  int head = 0; // query head
  int row = 0;
};

inline constexpr int kNoVisibleKey = INT_MIN; // block exponent of a block without visible keys

// Internals of one row. Per key j in [0, seqlen_k); per 32-key block b; per tile of block_n keys.
struct RowTrace {
  TraceRow where;
  std::vector<float> acc;      // QK^T accumulator (FP32); -inf for masked keys
  std::vector<float> t;        // log2-domain score acc * score_mul (FP32); -inf for masked keys
  std::vector<float> x;        // fma(acc, score_mul, -m) with the m of the key's tile; -inf if masked
  float score_mul = 0;         // the multiplier in use (score_terms.cuh: at least 2^-126)
  std::vector<float> p_fed;    // P as fed to the PV product in its tile (before later rescales)
  std::vector<uint8_t> code;   // directp: E2M1 magnitude code (0 for masked keys)
  std::vector<int> block_exponent; // directp: e_b, kNoVisibleKey for a block of masked keys
  std::vector<float> tile_m;   // running max after each tile
  std::vector<float> tile_l;   // normalizer after each tile
  float anchor = 0;            // SampledAnchor: the seeded m (-inf if none)
  float m = 0, l = 0;          // final state
  float lse = 0;               // as stored (natural log)
  std::vector<float> o;        // output row (BF16 values)
};

struct ModelOptions {
  RowSelection selection;
  std::vector<TraceRow> trace; // rows to trace (computed in addition to the selection)
};

struct ModelResult {
  AttentionResult result;
  std::vector<RowTrace> traces; // in the order of ModelOptions::trace
};

// Runs the model of spec.route. spec.head_dim must equal the problem's head_dim (64, 128 or
// 256); spec.causal and spec.softmax_scale apply. Errors: invalid shape or spec fields the
// model depends on, non-finite inputs (naming tensor and index), combinations NUMERICS.md does
// not define (e.g. directp with BF16-widened V).
llvm::Expected<ModelResult> runRouteModel(const AttentionSpec &spec, const AttentionProblem &problem,
                                          const ModelOptions &options);

} // namespace fa4jit::cpu
