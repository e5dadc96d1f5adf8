#pragma once
// Validation of a KernelSpec before anything is generated or compiled: the rules of the hardware
// and of the numerics (docs/NUMERICS.md), each a clear message naming the field instead of an NVRTC
// log. What a particular template supports (e.g. block_m == 16 * warps on the mma.sync attention
// path) is checked by that family's emitter, and again by the template's static_asserts.
#include <string>
#include <vector>

#include "fa4jit/codegen/spec.h"
#include "llvm/Support/Error.h"

namespace fa4jit {

// E4M3's largest finite value is 448 = 1.75 * 2^8: a P fed as E4M3(P * 2^offset) with P up to
// 2^slack (nvfp8) or 6 * 2^(slack - 2) (Direct-P) stays finite iff offset + ceil(slack) <= 8.
constexpr int kMaxFp8POffsetPlusSlack = 8;

// Limits of one target that the rules below use.
struct TargetLimits {
  int max_shared_bytes; // dynamic shared memory per CTA (opt-in maximum)
  bool fp8_mma;         // E4M3 tensor-core inputs (mma.sync on sm_89, wgmma on sm_90a, tcgen05)
  bool fp4_mma;         // block-scaled FP4 tensor-core inputs (tcgen05 kind::mxf4nvf4)
};
TargetLimits targetLimits(Target t);

// The least qk_widen_shift with which FP16 scores (TileSpec::scores_fp16) cannot overflow: the
// widened |Q|, |K| are at most E4M3(6 * 448 * 2^-shift) (22 at shift 7), so |S| <= head_dim * 22^2
// = 61952 < 65504 at head_dim <= 128 with shift 7, and head_dim 256 needs 8.
constexpr int minScoresFp16WidenShift(int head_dim) { return head_dim <= 128 ? 7 : 8; }

// Dynamic shared memory of the attention kernel for this spec: Q and K tiles of head_dim
// elements (2 bytes when they reach the tensor core as BF16, else 1) plus V (bf16 route: [keys][D]
// BF16; else V^T [D][keys] FP8), every row padded by 16 bytes against bank conflicts. Computed
// here independently of templates/fa4jit/attention/params.cuh; the emitted static_assert makes
// any disagreement a compile error. The wgmma schedule has its own layout
// (templates/fa4jit/attention_sm90/layout.cuh).
int attentionSharedBytes(const AttentionSpec &a);
// wgmma-ws: bytes of one K/V ring stage (K [block_n][D] and V^T [D][block_n], E4M3, in 128-byte
// swizzle column blocks; attention_sm90/layout.cuh), also one prewidened tile image.
int wgmmaStageBytes(const AttentionSpec &a);
// Bytes of the wgmma kernel's Q tile image [128][head_dim] (the persistent kernel's Q images).
int wgmmaQTileBytes(const AttentionSpec &a);
// wgmma-ws: the grid hands its work tiles out at run time (persistent, causal, no clusters; the
// device side's handsOutWorkTiles in attention_sm90/work_tiles.cuh): 32 bytes of shared memory
// for the tiles' slots and a work counter in the launch parameters.
bool handsOutWorkTiles(const AttentionSpec &a);
// Whether the kernel writes its own K/V and Q images (TileSpec::fused_widening, set, on the
// persistent wgmma grid of an FP8-fed route with prewidened images and no clusters); elsewhere the
// flag has no effect (canonicalize clears it).
bool fusesWidening(const AttentionSpec &a);

// Dynamic shared memory of the attention backward's main kernel (K, V and one query block's Q,
// dO, dS^T, LSE and delta; templates/fa4jit/attention_backward/params.cuh computes the same, and
// the emitted static_assert makes a disagreement a compile error).
int backwardSharedBytes(const BackwardSpec &b);

// Every violated rule, one message each, naming the field (e.g. "attention.tile.shape.block_n: 48 is
// not a multiple of 32 (the Direct-P block)"). Empty when the spec is valid.
std::vector<std::string> specViolations(const KernelSpec &spec);

// The same rules as an llvm::Error listing all violations (success when there are none).
llvm::Error validateSpec(const KernelSpec &spec);

} // namespace fa4jit
