#include "engine/workspace_layout.h"

#include "fa4jit/codegen/route_presets.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/quantize/params.cuh"

#include <algorithm>

namespace fa4jit::engine_detail {
namespace {

std::size_t alignUp(std::size_t n) { return (n + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment; }

// Places `bytes` (at least 16, so that every part has an address of its own) at `offset`.
Extent place(std::size_t &offset, std::size_t bytes) {
  Extent e{offset, std::max<std::size_t>(bytes, 16)};
  offset = alignUp(offset + e.bytes);
  return e;
}

} // namespace

QuantFormat valueFormat(Route route) { return route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead; }


std::size_t amaxPartialBytes(int heads_total, int seqlen) {
  namespace dq = device::quantize;
  const std::size_t chunks = std::size_t((dq::quantizePaddedKeys(seqlen) + dq::kRowsPerMaskWord - 1) /
                                         dq::kRowsPerMaskWord);
  static_assert(dq::kVtKeyTile == 128, "S padded to 128 rows, as the row-major encodes cover");
  return alignUp(std::size_t(heads_total) * chunks * 4);
}

std::size_t layOutQuantized(QuantFormat format, int heads_total, int seqlen, int head_dim, std::size_t offset,
                            QuantizedOperandLayout &out) {
  namespace dq = device::quantize;
  const int f = static_cast<int>(format);
  const std::size_t heads = static_cast<std::size_t>(heads_total);
  offset = alignUp(offset);
  out.payload = place(offset, heads * dq::quantizePayloadBytesPerHead(f, head_dim, seqlen));
  out.scales = place(offset, heads * dq::quantizeScaleBytesPerHead(f, head_dim, seqlen));
  out.head_scalar = place(offset, heads * 4);
  out.nonfinite_rows = place(offset, dq::nonfiniteRowsBytes(heads_total, seqlen));
  out.amax_partial =
      place(offset, amaxPartialBytes(heads_total, seqlen) + std::size_t(dq::quantizeSyncWords(heads_total)) * 4);
  return offset;
}

QuantizedOperand operandAt(std::uint64_t base, const QuantizedOperandLayout &l, QuantFormat format, int batch,
                           int heads, int seqlen, int head_dim) {
  QuantizedOperand o;
  o.format = format;
  o.batch = batch, o.heads = heads, o.seqlen = seqlen, o.head_dim = head_dim;
  o.payload = base + l.payload.offset, o.scales = base + l.scales.offset;
  o.head_scalar = base + l.head_scalar.offset, o.nonfinite_rows = base + l.nonfinite_rows.offset;
  o.amax_partial = base + l.amax_partial.offset;
  return o;
}

WorkspaceLayout workspaceLayout(const KernelSpec &spec, const ForwardShape &s, bool with_operands) {
  const AttentionSpec &as = spec.attention;
  WorkspaceLayout l;
  std::size_t offset = 0;
  const std::size_t kv_heads = std::size_t(s.batch) * std::size_t(s.heads_kv);
  const std::size_t q_heads = std::size_t(s.batch) * std::size_t(s.heads_q);
  std::size_t counter_bytes = 2 * sizeof(std::int32_t);
  l.widen_state_offset = counter_bytes;
  if (fusesWidening(as))
    counter_bytes += (2 + kv_heads) * sizeof(std::uint32_t);
  l.quantized = with_operands && as.route != Route::Bf16;
  if (l.quantized) {
    l.quantize_sync_offset = counter_bytes;
    counter_bytes += device::quantize::quantizeSyncWords(static_cast<std::int64_t>(std::max(q_heads, kv_heads))) *
                     sizeof(std::uint32_t);
  }
  l.counters = place(offset, counter_bytes);
  if (l.quantized) {
    const QuantFormat qk = qkQuantizationOf(as).format;
    offset = layOutQuantized(qk, s.batch * s.heads_q, s.seqlen_q, s.head_dim, offset, l.q);
    offset = layOutQuantized(qk, s.batch * s.heads_kv, s.seqlen_k, s.head_dim, offset, l.k);
    offset = layOutQuantized(valueFormat(as.route), s.batch * s.heads_kv, s.seqlen_k, s.head_dim, offset, l.v);
  }
  if (as.tile.staging.kv == KvStaging::Prewidened) {
    const std::size_t tiles = std::size_t((s.seqlen_k + as.tile.shape.block_n - 1) / as.tile.shape.block_n);
    l.kv_tiles = place(offset, kv_heads * tiles * std::size_t(wgmmaStageBytes(as)));
  }
  if (as.tile.schedule.persistent && as.tile.staging.kv != KvStaging::TensorMap) {
    const std::size_t blocks = std::size_t((s.seqlen_q + as.tile.shape.block_m - 1) / as.tile.shape.block_m);
    l.q_tiles = place(offset, q_heads * blocks * std::size_t(wgmmaQTileBytes(as)));
  }
  l.total = offset;
  return l;
}

} // namespace fa4jit::engine_detail
