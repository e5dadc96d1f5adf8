#pragma once
// Run-time arguments and output layout of the quantizer kernels (docs/NUMERICS.md §1).
// Host-compilable: the runtime fills this exact struct and passes it by value as the one kernel
// argument of both passes (same convention as attention/params.cuh); the static_asserts pin the
// layout that host and device share.
//
// Two passes per tensor, launched in this order on one stream:
//   <name>_amax   grid (amax_chunks, batch * heads): per-head partial max |x| of the finite
//                 elements into amax_partial, and the row bitmask of nonfinite_rows;
//   <name>_encode grid quantizeEncodeGrid(...): reduces the partials of its head, then writes the
//                 payload, the scale factors, the per-head scalar and the head's first non-finite
//                 row.
// Neither pass needs a cleared workspace: every word they own is written on every launch.
//
// NVFP4 and E4M3 rows can also run as one pipelined pass, <name>_pipelined (see
// quantizePipelinedGroups below): x is read from memory once, the second read comes from L2.
//
// MXFP4 V^T can also run as its encode pass alone (sync != 0): its codes and scales depend on
// each 32-key block only, and the head's v_shift and row bitmask are finished by the head's last
// CTA to end, from per-head words in `sync` (quantizeSyncWords, zero at launch and left zero): no
// CTA waits for another, and x is read once. NVFP4's codes depend on the head's global scale, and
// FP8's on s_v: they need the maximum before they encode (a per-head barrier in one pass measured
// slower than the two passes on the H200, whose phases it serializes).
//
// Non-finite inputs (docs/NUMERICS.md §1.3). A NaN or Inf element is encoded as 0 and left out of
// every maximum (head and block), so the finite elements encode exactly as they would with 0 in
// its place; nonfinite_rows records which rows held one, for the attention forward (which makes
// the output rows they reach NaN) or for the engine's checking mode (which makes them an error).
//
// Outputs are dense, (batch, head) major, each head's block exactly as the host reference
// (codegen/block_formats.h) lays out one matrix:
//   NVFP4 Q/K   payload [B, H, S, D/2]           scales  [B*H][quantizeScaleBytesPerHead]
//               head_scalar float g
//   MXFP4 V^T   payload [B, H, D, Skp/2]         scales  [B*H][quantizeScaleBytesPerHead]
//               head_scalar int32 v_shift = (max block exponent of the head) - 6
//   FP8 V^T     payload [B, H, D, Skp]           scales  unused (0)
//               head_scalar float s_v
//   E4M3 Q/K    payload [B, H, S, D]             scales  unused (0)
//               head_scalar float g (NVFP4's), codes E4M3(x / g * 2^-code_shift)
// with Skp = S rounded up to 128 (padding keys hold code 0), the scale tensors in the SF layout
// of NUMERICS.md §1.1 (padding rows and columns 0), and V^T keys stored in vtKeyAt order.
#include "fa4jit/common.cuh"

namespace fa4jit::device::quantize {

struct QuantizeParams {
  uint64_t x;            // input [B, H, S, D]: bf16, fp16 or fp32 (baked), head dim contiguous
  uint64_t payload;      // output payload (layout above)
  uint64_t scales;       // output scale factors (NVFP4, MXFP4); 0 for FP8
  uint64_t head_scalar;  // [B*H]: float g (NVFP4), int32 v_shift (MXFP4), float s_v (FP8)
  uint64_t amax_partial; // float [B*H][amax_chunks], workspace written by the amax pass
  uint64_t nonfinite_rows; // layout nonfiniteRowsBytes: int32 [B*H] first non-finite row of the
                           // head (INT32_MAX: none), then uint32 [B*H][ceil(S / 32)] row bitmask
  int64_t x_batch_stride, x_head_stride, x_row_stride; // in elements of x
  int32_t batch;
  int32_t heads;
  int32_t seqlen;        // S >= 1 (rows of Q/K, keys of V)
  int32_t amax_chunks;   // CTAs per head of the amax pass, >= 1
  uint64_t sync;         // MXFP4's encode alone and the pipelined pass: uint32 [quantizeSyncWords], else 0
};
static_assert(sizeof(QuantizeParams) == 7 * 8 + 3 * 8 + 4 * 4, "QuantizeParams layout changed");
static_assert(alignof(QuantizeParams) == 8, "QuantizeParams alignment changed");

// 16-byte vector loads of x are legal when its base and every stride keep 16-byte alignment (column
// offsets are multiples of the vector by construction); elem_bytes is x's element size. The device
// passes take the scalar path otherwise, and the engine the two passes instead of the cluster kernel.
FA4JIT_HD constexpr bool quantizeVectorLoadsOk(const QuantizeParams &p, int elem_bytes) {
  const uint64_t b = static_cast<uint64_t>(elem_bytes);
  return ((p.x | static_cast<uint64_t>(p.x_batch_stride) * b | static_cast<uint64_t>(p.x_head_stride) * b |
           static_cast<uint64_t>(p.x_row_stride) * b) &
          15u) == 0;
}

// Rows of one word of the non-finite row bitmask.
constexpr int kRowsPerMaskWord = 32;
constexpr int32_t kNoNonFiniteRow = 0x7FFFFFFF;

FA4JIT_HD constexpr int64_t nonfiniteMaskWords(int seqlen) {
  return (static_cast<int64_t>(seqlen) + kRowsPerMaskWord - 1) / kRowsPerMaskWord;
}
// Bytes of nonfinite_rows for `heads_total` = batch * heads heads of `seqlen` rows.
FA4JIT_HD constexpr int64_t nonfiniteRowsBytes(int64_t heads_total, int seqlen) {
  return heads_total * 4 + heads_total * nonfiniteMaskWords(seqlen) * 4;
}

// uint32 words of `sync` per head: CTAs ended, max |x| bits, a non-finite flag.
constexpr int kSyncWordsPerHead = 3;
FA4JIT_HD constexpr int64_t quantizeSyncWords(int64_t heads_total) { return kSyncWordsPerHead * heads_total; }

// Keys of V^T are padded to a multiple of this (one 4-column scale atom of 32-key blocks).
constexpr int kVtKeyTile = 128;

FA4JIT_HD constexpr int64_t quantizePaddedKeys(int seqlen) {
  return (static_cast<int64_t>(seqlen) + kVtKeyTile - 1) / kVtKeyTile * kVtKeyTile;
}

FA4JIT_HD constexpr int64_t sfBytes(int64_t rows, int64_t scale_cols) {
  return (rows + 127) / 128 * ((scale_cols + 3) / 4) * 512;
}

// format: 0 NVFP4 (row-major), 1 MXFP4 (V^T), 2 FP8 (V^T), 4 E4M3 rows (row-major), as
// fa4jit::QuantFormat.
constexpr int kFormatE4m3Rows = 4;
FA4JIT_HD constexpr bool quantizeRowMajor(int format) { return format == 0 || format == kFormatE4m3Rows; }
FA4JIT_HD constexpr int64_t quantizePayloadBytesPerHead(int format, int head_dim, int seqlen) {
  return format == 0                 ? static_cast<int64_t>(seqlen) * head_dim / 2
         : format == kFormatE4m3Rows ? static_cast<int64_t>(seqlen) * head_dim
                                     : head_dim * quantizePaddedKeys(seqlen) / (format == 1 ? 2 : 1);
}

FA4JIT_HD constexpr int64_t quantizeScaleBytesPerHead(int format, int head_dim, int seqlen) {
  return format == 0 ? sfBytes(seqlen, head_dim / 16)
                     : (format == 1 ? sfBytes(head_dim, quantizePaddedKeys(seqlen) / 32) : 0);
}

// Key (within a 32-key block) stored at position `pos`. Permuted: inside each 16 keys the order
// [0,1,8,9,2,3,10,11,4,5,12,13,6,7,14,15], so the 4 keys a Hopper thread holds in its S
// accumulator ({2q, 2q+1, 8+2q, 9+2q}) are the 4 consecutive k its FP8 A fragment wants ({4q..4q+3})
// and P needs no shuffle.
FA4JIT_HD constexpr int vtKeyAt(int pos, bool permuted) {
  if (!permuted)
    return pos;
  const int a = (pos & 15) / 4, b = pos & 3;
  return (pos & 16) + 2 * a + (b & 1) + (b >= 2 ? 8 : 0);
}

// Rows of x one row tile of the NVFP4 encode pass covers: one thread per 16-element block.
FA4JIT_HD constexpr int nvfp4RowsPerCta(int threads, int head_dim) { return threads / (head_dim / 16); }
// Row tiles one NVFP4 encode CTA loops over: the head's maximum is reduced once for all of them,
// and the next tile's loads are in flight while one is encoded (a CTA per tile spends most of its
// life waiting on its loads and that reduction).
constexpr int kNvfp4TilesPerCta = 4;
// Rows one row-major encode CTA covers (its row group): kNvfp4TilesPerCta row tiles.
FA4JIT_HD constexpr int rowGroupRows(int threads, int head_dim) {
  return nvfp4RowsPerCta(threads, head_dim) * kNvfp4TilesPerCta;
}
// Row groups of one head: S padded to 128 rows (NVFP4's padding rows' scale bytes are written too).
FA4JIT_HD constexpr int quantizeRowGroups(int seqlen, int threads, int head_dim) {
  return static_cast<int>(((static_cast<int64_t>(seqlen) + 127) / 128 * 128 + rowGroupRows(threads, head_dim) - 1) /
                          rowGroupRows(threads, head_dim));
}
// 128-key tiles one V^T encode CTA loops over, for the same reasons.
constexpr int kVtTilesPerCta = 4;
// Head-dim rows of one V^T tile: four threads (32-key blocks) per row of 128 keys.
FA4JIT_HD constexpr int vtDimsPerCta(int threads) { return threads / 4; }

struct Grid3 {
  int x, y, z;
};

FA4JIT_HD constexpr int ceilDiv(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

// Grid of the encode pass (block = threads, no dynamic shared memory).
//   NVFP4, E4M3 rows: x over groups of kNvfp4TilesPerCta row tiles (S padded to 128: NVFP4's
//          padding rows' scale bytes are written too), y = B*H.
//   V^T:   x over groups of kVtTilesPerCta 128-key tiles, y over head-dim tiles, z = B*H.
FA4JIT_HD constexpr Grid3 quantizeEncodeGrid(int format, int head_dim, int threads, int batch, int heads,
                                            int seqlen) {
  return quantizeRowMajor(format)
             ? Grid3{quantizeRowGroups(seqlen, threads, head_dim), batch * heads, 1}
             : Grid3{ceilDiv(quantizePaddedKeys(seqlen) / kVtKeyTile, kVtTilesPerCta), head_dim / vtDimsPerCta(threads),
                     batch * heads};
}

// Rows of x one CTA of the amax pass covers: whole words of the row bitmask, so that every word has
// one writer.
FA4JIT_HD constexpr int amaxRowsPerChunk(int seqlen, int chunks) {
  const int rows = (seqlen + chunks - 1) / chunks;
  return (rows + kRowsPerMaskWord - 1) / kRowsPerMaskWord * kRowsPerMaskWord;
}

// amax_chunks: about 256 rows per CTA of the amax pass (a few loads in flight per thread, several
// CTAs per SM), and enough CTAs to fill the GPU many times over when there are few heads.
FA4JIT_HD constexpr int quantizeDefaultAmaxChunks(int batch, int heads, int seqlen) {
  const int by_rows = ceilDiv(seqlen, 256);
  const int to_fill = ceilDiv(16 * 132, static_cast<int64_t>(batch) * heads);
  const int most = ceilDiv(seqlen, kRowsPerMaskWord); // (a chunk holds whole mask words)
  const int c = by_rows > to_fill ? by_rows : to_fill;
  return c < 1 ? 1 : (c > most ? most : c);
}

// The one-pass quantizer (cluster_pass.cuh) of NVFP4 rows, E4M3 rows and FP8 V^T: a cluster of
// `ctas` CTAs per head, each staging whole 128-row tiles of x in shared memory.
FA4JIT_HD constexpr int quantizeClusterRowsPerCta(int seqlen, int ctas) {
  return ceilDiv(ceilDiv(seqlen, 128), ctas) * 128;
}
FA4JIT_HD constexpr int64_t quantizeClusterSliceBytes(int seqlen, int head_dim, int elem_bytes, int ctas) {
  return static_cast<int64_t>(quantizeClusterRowsPerCta(seqlen, ctas)) * head_dim * elem_bytes;
}
// Clusters of up to 16 CTAs: more than 8 is non-portable on sm_90, so the engine launches 16 only
// where the device can hold such a cluster.
constexpr int kQuantizeClusterMaxCtas = 16;
// A slice of at most 64 KiB: three CTAs share an SM, so one copies its slice in while another
// encodes. With one CTA per SM the copy and the encode alternate and the memory idles meanwhile.
constexpr int64_t kQuantizeClusterSliceBytes = 64 * 1024;
// The cluster size for one head: the fewest CTAs, a power of two up to `max_ctas`, whose slices fit
// kQuantizeClusterSliceBytes; 0 where none does (the two passes run).
FA4JIT_HD constexpr int quantizeClusterCtas(int seqlen, int head_dim, int elem_bytes,
                                           int max_ctas = kQuantizeClusterMaxCtas) {
  for (int ctas = 1; ctas <= max_ctas; ctas *= 2)
    if (quantizeClusterSliceBytes(seqlen, head_dim, elem_bytes, ctas) <= kQuantizeClusterSliceBytes)
      return ctas;
  return 0;
}

// The pipelined one-pass quantizer (pipelined_pass.cuh) of NVFP4 and E4M3 rows: a grid of resident
// CTAs walks the (head, row group) items in order, each CTA taking every gridDim.x-th. For item i
// it reduces the group's max |x| (x read from memory), then encodes the item it reduced `lag`
// steps before, once every group of that head has been reduced: x is then read again from L2,
// where the reduction left it `lag` steps earlier. Every CTA reduces its item of a step before it
// waits in that step, and the items a wait needs all belong to that step or earlier ones, so the
// grid never deadlocks while all its CTAs are resident.
//   Row groups per head: rowGroupRows rows each over S padded to 128 (amax_chunks = that count:
//   the partial of group g of head bh at amax_partial[bh * amax_chunks + g]).
FA4JIT_HD constexpr int quantizePipelinedGroups(int seqlen, int threads, int head_dim) {
  return quantizeRowGroups(seqlen, threads, head_dim); // (the encode pass's grid along x)
}
// Steps between reducing an item and encoding it: enough that the last group of the encoded
// item's head lies in the encoding step or an earlier one, for every CTA (groups_per_head <=
// lag * grid).
FA4JIT_HD constexpr int quantizePipelinedLag(int groups_per_head, int grid) {
  const int lag = ceilDiv(groups_per_head, grid);
  return lag > 1 ? lag : 1;
}
// Bytes of x the grid reads between reducing an item and encoding it, which L2 must hold.
FA4JIT_HD constexpr int64_t quantizePipelinedBytesInFlight(int groups_per_head, int grid, int threads, int head_dim,
                                                          int elem_bytes) {
  return static_cast<int64_t>(quantizePipelinedLag(groups_per_head, grid)) * grid * rowGroupRows(threads, head_dim) *
         head_dim * elem_bytes;
}
// The mask words of a row group have one writer: its rows are whole words.
FA4JIT_HD constexpr bool quantizePipelinedFits(int threads, int head_dim) {
  return rowGroupRows(threads, head_dim) % kRowsPerMaskWord == 0;
}
// sync words per head: groups reduced, groups encoded (zero at launch; the head's last encoder
// leaves them zero).
constexpr int kPipelinedSyncWordsPerHead = 2;
static_assert(kPipelinedSyncWordsPerHead <= kSyncWordsPerHead, "the pipelined pass uses quantizeSyncWords");

} // namespace fa4jit::device::quantize
