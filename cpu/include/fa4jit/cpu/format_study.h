#pragma once
// The operand formats on their own (`fa4jit accuracy --formats`): what attention loses to each
// combination of a Q/K format and a P/V format, apart from any kernel's schedule. The forward
// routes' kernel-exact models (model.h) add the kernels' own steps to this (online softmax per key
// tile, the Direct-P classifier, the range guard); the study shows which format holds up at which
// logit scale, including formats no kernel consumes yet.
//
// The model, per (batch, head) and selected query row, in FP64 over decoded values:
//   Q, K quantized along the head dim per the Q/K format and decoded;
//   S = scale * Q K^T (the tensor core's FP32 sum of exact products changes nothing measurable);
//   P = exp(S - max S) over the visible keys (the exact row max: no online rescaling);
//   P_fed = P quantized per the P/V format, V quantized per the P/V format (along the keys);
//   O = sum P_fed V_fed / sum P_fed (the normalizer from the fed values, as every route).
// Formats (docs/NUMERICS.md §1 for the first three and the P rules):
//   Q/K nvfp4    E2M1, 16 elements per UE4M3 scale, one FP32 scale per head (quantizeNvfp4)
//       mxfp4    E2M1, 32 elements per UE8M0 scale (quantizeMxfp4)
//       e4m3-row E4M3 with one FP32 scale per row, amax / 448 (per token, as DeepGEMM's FP8)
//       mxfp8    E4M3, 32 elements per UE8M0 scale, the smallest power of two that keeps the
//                block's maximum at or below 448 (2^ceil(log2(amax / 448)): nothing saturates)
//   P/V mxfp4    P: E2M1 with one UE8M0 exponent per 32 keys, E = floor(log2 max P) - 2 (what
//                Direct-P approximates); V^T: MXFP4 per 32 keys
//       e4m3     P: E4M3(P * 2^8) * 2^-8 (the nvfp8 route's offset); V: E4M3 with one FP32 scale
//                per head
#include "fa4jit/cpu/reference.h"
#include "fa4jit/cpu/tensor.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace fa4jit::cpu {

// E4m3Head: the kernels' E4M3 Q/K (docs/NUMERICS.md §1.4: NVFP4's per-head scale, shift 7).
enum class StudyQkFormat { Nvfp4, Mxfp4, E4m3Head, E4m3Row, Mxfp8 };
enum class PvFormat { Mxfp4, E4m3 };

struct FormatPair {
  StudyQkFormat qk = StudyQkFormat::Nvfp4;
  PvFormat pv = PvFormat::E4m3;
};

const char *toString(StudyQkFormat f);
const char *toString(PvFormat f);
// "nvfp4 / e4m3"
std::string toString(const FormatPair &pair);
// Every Q/K format with every P/V format, Q/K major.
std::vector<FormatPair> allFormatPairs();

// One operand matrix [rows, cols] quantized along its columns and decoded (the study's building
// block; exposed for tests). Errors: non-finite input, cols not a multiple of the format's block.
llvm::Expected<std::vector<float>> roundTripQk(StudyQkFormat format, const float *data, int rows, int cols);

// O and LSE of the study model for the selected rows (AttentionResult's layout; LSE from the
// unquantized P). Errors: those of validateProblem, and of the quantizers.
llvm::Expected<AttentionResult> formatStudyAttention(const FormatPair &formats, const AttentionProblem &problem,
                                                     const ReferenceOptions &options);

} // namespace fa4jit::cpu
