#pragma once
// Private to the engine: where each part of a forward's workspace lies. One function decides the
// layout, used alike for the engine's own workspace (grown to `total`) and for a caller's
// (Engine::workspaceSize, Engine::forward with a workspace).
#include "fa4jit/codegen/spec.h"

#include <cstddef>
#include <cstdint>

namespace fa4jit::engine_detail {

// Every part starts on this boundary (cuMemAlloc's, and more than any vector load needs).
constexpr std::size_t kWorkspaceAlignment = 256;

struct Extent {
  std::size_t offset = 0, bytes = 0;
};

// The device parts of one quantized operand (QuantizedTensor's buffers), as offsets.
struct QuantizedOperandLayout {
  Extent payload, scales, head_scalar, nonfinite_rows, amax_partial;
};

struct ForwardShape {
  int batch = 0, heads_q = 0, heads_kv = 0, seqlen_q = 0, seqlen_k = 0, head_dim = 0;
};

struct WorkspaceLayout {
  // int32 work_counter[2], uint32 widen_state words (attention/params.cuh), then the sync words
  // of the one-pass quantizers (quantize/params.cuh; Q's, K's and V's in turn, on one stream),
  // first so that they stay put when other parts move; zero before every launch that uses them, and
  // left zero by it.
  Extent counters;
  std::size_t widen_state_offset = 0;    // inside `counters`
  std::size_t quantize_sync_offset = 0;  // inside `counters` (when `quantized`)
  bool quantized = false;             // q, k, v below are used
  QuantizedOperandLayout q, k, v;
  Extent kv_tiles, q_tiles; // widened tile images (empty when the kernel has none)
  std::size_t total = 0;
};

// Bytes of the amax partials at the start of an operand's amax_partial part: room for the two
// passes' chunks and the pipelined pass's row groups (at least 32 rows each). The quantizers' sync
// words follow them (quantizeSyncWords): a QuantizedTensor's own, kept apart from the partials.
std::size_t amaxPartialBytes(int heads_total, int seqlen);

// The parts of one operand of `format` with `heads_total` = batch * heads heads of `seqlen` rows
// and head dim `head_dim`, laid out from `offset` on; returns the end.
std::size_t layOutQuantized(QuantFormat format, int heads_total, int seqlen, int head_dim, std::size_t offset,
                            QuantizedOperandLayout &out);

// The layout of a forward of `spec` on `shape`; `with_operands`: the forward quantizes its BF16
// inputs into the workspace (a forward on quantized operands needs no room for them).
WorkspaceLayout workspaceLayout(const KernelSpec &spec, const ForwardShape &shape, bool with_operands);

// One quantized operand by address: a QuantizedTensor's buffers, or parts of a workspace.
struct QuantizedOperand {
  QuantFormat format = QuantFormat::Nvfp4;
  int batch = 0, heads = 0, seqlen = 0, head_dim = 0;
  std::uint64_t payload = 0, scales = 0, head_scalar = 0, nonfinite_rows = 0, amax_partial = 0;
  // Sync words of the one-pass quantizers (MXFP4's encode alone, the pipelined pass; 0: none, the
  // other passes run), and whether they are known to be zero (else they are cleared on the stream
  // first).
  std::uint64_t sync = 0;
  bool sync_zero = false;
  int code_shift = 0; // E4m3Rows: the attention kernel's qk_widen_shift
};

// The operand whose parts `layout` places in the workspace at `base`.
QuantizedOperand operandAt(std::uint64_t base, const QuantizedOperandLayout &layout, QuantFormat format, int batch,
                           int heads, int seqlen, int head_dim);

// The format V is quantized to on `route`.
QuantFormat valueFormat(Route route);


} // namespace fa4jit::engine_detail
