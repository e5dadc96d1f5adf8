#pragma once
// The persistent wgmma kernel widens its own operands (TileSpec::fused_widening): no widening
// passes before it. The passes (widen_kv.cuh, widen_q.cuh) move every FP4 byte through memory
// before the first attention tile starts, ~94 us of a 1.1 ms forward at 4096 keys (D128,
// sixth session's Nsight Compute split), time in which no tensor core works. Here warps 1..3 of the
// producer warpgroup, idle beside the one thread that moves the tiles, write the same images
// while the consumers compute:
//   - Q: the Q block of each of the CTA's work tiles, into its image (only this CTA reads it), a
//     work tile or two ahead of the consumers (two slots, below);
//   - K/V: the tiles of the kv head of each of those work tiles, in pieces that a warp claims from
//     the head's counter (WidenState::claimed) and writes alone, so that every piece is widened
//     once per forward by whichever CTA's warp gets there first (the CTAs of one head run at
//     about the same time and share the work); the head's `written` counter then counts it.
// The thread that moves the tiles (producer_role.cuh) takes the work tiles from the widener
// warps' slots, copies a Q image once its tile's slot is full, and copies a head's K/V images
// once its `written` count is complete.
// No wait can close a cycle: a claimed piece is written without waiting on anything, and a CTA's
// wideners claim every remaining piece of a head before the CTA's tile mover can wait on that head
// (they fill the tile's slot first, then claim), so a head's count always completes, whatever
// CTAs are resident. The last CTA to finish zeroes the counters for the next launch.
// Memory order: the images are generic-proxy stores read by the bulk-copy engine (the async
// proxy), so writers fence the proxies (fence.proxy.async.global) before they signal, and the
// mover after it observes the signal and before it copies.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/widen_q.cuh"
#include "fa4jit/attention_sm90/work_tiles.cuh"

namespace fa4jit::device::attention_sm90 {

constexpr int kWidenerWarps = 3; // producer warps 1..3 (warp 0's lane 0 moves the tiles)
constexpr int kWidenerThreads = 32 * kWidenerWarps;
constexpr int kWidenerBarrier = 8; // their named barrier (the consumers' turns take 1..3)

// The widener warps have 32 registers. Terms derived from the launch's shape and hoisted out of
// their loops (by NVVM or by ptxas) were held across the widening and spilled, and so were 64-bit
// pointers into shared memory and their loop counter. So everything they keep lives in shared memory
// at one 32-bit address (WidenerBuffers), read with volatile loads where it is used, which neither
// compiler moves, and the thread's indices are read again from the special registers.
FA4JIT_DEVICE int sharedWord(uint32_t addr) {
  int v;
  asm volatile("ld.volatile.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
FA4JIT_DEVICE void setSharedWord(uint32_t addr, int v) {
  asm volatile("st.volatile.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
FA4JIT_DEVICE int laneNow() {
  int lane;
  asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(lane));
  return lane;
}
// This thread's index among the widener warps (warps 1..3 of the CTA).
FA4JIT_DEVICE int widenerThreadNow() {
  int tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  return tid - 32;
}

// Generic-proxy global writes and async-proxy (bulk copy) reads of the same images.
FA4JIT_DEVICE void fenceProxyAsyncGlobal() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

FA4JIT_DEVICE uint32_t loadAcquireGpu(const uint32_t *addr) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(addr) : "memory");
  return v;
}

// The launch's counters in global memory (AttentionParams::widen_state): zero before and after.
struct WidenState {
  uint32_t *finished; // CTAs through with the counters
  uint32_t *claimed;  // [B * Hkv] pieces of the head's K/V images handed to a warp
  uint32_t *written;  // [B * Hkv] pieces written
};
FA4JIT_DEVICE WidenState widenState(const attention::AttentionParams &p, int batch, int heads_kv) {
  uint32_t *w = reinterpret_cast<uint32_t *>(p.widen_state);
  const int heads = batch * heads_kv;
  return {w, w + 1, w + 1 + heads};
}

// Shared memory at the layout's widen_offset (112 bytes), by its shared-window address:
//   [0, 16)   tile_full[2]: slot k % 2 holds work tile k and its Q image is written (an arrive per widener warp)
//   [16, 32)  tile_empty[2]: the tile mover has read the slot (one arrive)
//   [32, 40)  done: the widener warps are through with the counters (an arrive per warp)
//   [40, 44)  the leader's next work tile
//   [48, 64)  slots[2][2]: m-block (-1: no more work tiles), query head b * Hq + hq
//   [64, 88)  the shape: seqlen_q, seqlen_k, heads_q, heads_kv, batch, grid (written by thread 0)
//   [88, 100) each widener warp's work-tile counter k
struct WidenerBuffers {
  uint32_t addr;
  FA4JIT_DEVICE uint32_t tileFull(int s) const { return addr + 8 * s; }
  FA4JIT_DEVICE uint32_t tileEmpty(int s) const { return addr + 16 + 8 * s; }
  FA4JIT_DEVICE uint32_t done() const { return addr + 32; }
  FA4JIT_DEVICE uint32_t next() const { return addr + 40; }
  FA4JIT_DEVICE uint32_t slot(int s) const { return addr + 48 + 8 * s; } // (m-block, head)
  FA4JIT_DEVICE uint32_t iteration(int warp) const { return addr + 88 + 4 * warp; }
  FA4JIT_DEVICE int seqlenQ() const { return sharedWord(addr + 64); }
  FA4JIT_DEVICE int seqlenK() const { return sharedWord(addr + 68); }
  FA4JIT_DEVICE int headsQ() const { return sharedWord(addr + 72); }
  FA4JIT_DEVICE int headsKv() const { return sharedWord(addr + 76); }
  FA4JIT_DEVICE int batch() const { return sharedWord(addr + 80); }
  FA4JIT_DEVICE int grid() const { return sharedWord(addr + 84); }
  // (thread 0, with the mbarriers, before the barrier that starts the roles)
  FA4JIT_DEVICE void init(const attention::AttentionParams &p) const {
    for (int s = 0; s < 2; ++s) {
      mbarrierInit(tileFull(s), kWidenerWarps);
      mbarrierInit(tileEmpty(s), 1);
    }
    mbarrierInit(done(), kWidenerWarps);
    const int shape[6] = {p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.batch, static_cast<int>(gridDim.x)};
#pragma unroll
    for (int i = 0; i < 6; ++i)
      setSharedWord(addr + 64 + 4 * i, shape[i]);
    setSharedWord(next(), static_cast<int>(blockIdx.x));
    for (int w = 0; w < kWidenerWarps; ++w)
      setSharedWord(iteration(w), 0);
  }
  // The slot of this widener warp's current work tile (read where it is used, as its kv head:
  // held across the widening loops, they and what derives from them spilled).
  FA4JIT_DEVICE int currentSlot() const { return sharedWord(iteration(widenerThreadNow() / 32)) & 1; }
  // The kv head of the query head in this warp's current slot.
  FA4JIT_DEVICE int currentKvHead() const {
    const int head = sharedWord(slot(currentSlot()) + 4);
    const int heads_q = headsQ(), heads_kv = headsKv();
    return (head / heads_q) * heads_kv + (head % heads_q) / (heads_q / heads_kv);
  }
};

// One K/V tile's image (widen_kv.cuh's bytes) in pieces of at most 16 units per lane of a warp:
// K's 16-element NVFP4 units, then V^T's units (nvfp8: 16-key FP8 vectors; directp: 32-key MXFP4
// blocks). The loops keep one unit in flight per lane: the widener warps have 32 registers.
template <class C, class S> struct KvPieces {
  static constexpr bool kThreadKeyBlocks = attention::ThreadKeyBlocksOf<C>::value;
  static constexpr bool kNvfp8 = C::route == attention::Route::Nvfp8;
  static constexpr int kUnitsPerPiece = 16 * 32;
  static constexpr int kKUnitsPerRow = S::kHeadDim / 16;
  static constexpr int kKUnits = S::kBlockN * kKUnitsPerRow;
  static constexpr int kVUnitsPerRow = kNvfp8 ? S::kBlockN / 16 : S::kBlockN / 32;
  static constexpr int kVUnits = S::kHeadDim * kVUnitsPerRow;
  static constexpr int kVUnitsPerPiece = kUnitsPerPiece;
  static constexpr int kKPieces = (kKUnits + kUnitsPerPiece - 1) / kUnitsPerPiece;
  static constexpr int kVPieces = (kVUnits + kVUnitsPerPiece - 1) / kVUnitsPerPiece;
  static constexpr int kPerTile = kKPieces + kVPieces;
  static_assert(C::route != attention::Route::Bf16, "the bf16 route has tensor-map tiles: nothing to widen");
};

// Piece `piece` (tile piece / kPerTile) of kv head head_kv's images, by one warp.
template <class C, class S>
FA4JIT_DEVICE void widenKvPiece(const attention::AttentionParams &p, const WidenerBuffers &wb, int head_kv,
                                int tiles_per_head, int piece) {
  using P = KvPieces<C, S>;
  constexpr Sm90Layout L = S::kLayout;
  const int tile = piece / P::kPerTile, part = piece % P::kPerTile;
  const int heads_kv = wb.headsKv(), sk = wb.seqlenK();
  const int b = head_kv / heads_kv, hkv = head_kv % heads_kv;
  uint8_t *image = reinterpret_cast<uint8_t *>(p.kv_tiles) +
                   (static_cast<int64_t>(head_kv) * tiles_per_head + tile) * static_cast<int64_t>(L.stage_bytes);
  const int key0 = tile * S::kBlockN;
  if (part < P::kKPieces) {
    const int row_stride = static_cast<int>(p.k_row_stride);
    const uint8_t *k = reinterpret_cast<const uint8_t *>(p.k) + b * p.k_batch_stride + hkv * p.k_head_stride +
                       key0 * row_stride;
    const uint8_t *k_sf = reinterpret_cast<const uint8_t *>(p.k_sf) + b * p.k_sf_batch_stride +
                          hkv * p.k_sf_head_stride;
    const int k_valid = sk - key0 < S::kBlockN ? sk - key0 : S::kBlockN;
    const float pre = exp2Int(-C::qk_widen_shift);
    const int first = part * P::kUnitsPerPiece;
    const int end = first + P::kUnitsPerPiece < P::kKUnits ? first + P::kUnitsPerPiece : P::kKUnits;
#pragma unroll 1
    for (int u = first + laneNow(); u < end; u += 32)
      widenNvfp4Unit<S::kHeadDim, S::kBlockN, P::kThreadKeyBlocks>(image, k, row_stride, k_sf, key0, k_valid, pre,
                                                                   u / P::kKUnitsPerRow, u % P::kKUnitsPerRow);
    return;
  }
  KvHeadSources src = kvHeadSources<C>(p, b, hkv, head_kv);
  src.keys_padded = (sk + 127) / 128 * 128; // (sk from the shape in shared memory)
  uint8_t *v_image = image + (L.v_offset - L.k_offset);
  const int row_stride = static_cast<int>(p.v_row_stride);
  const int first = (part - P::kKPieces) * P::kVUnitsPerPiece;
  const int end = first + P::kVUnitsPerPiece < P::kVUnits ? first + P::kVUnitsPerPiece : P::kVUnits;
#pragma unroll 1
  for (int u = first + laneNow(); u < end; u += 32) {
    const int d = u / P::kVUnitsPerRow, unit = u % P::kVUnitsPerRow;
    if constexpr (P::kNvfp8)
      copyFp8VtUnit<S::kHeadDim, C::v_keys_permuted16>(v_image, src.v, row_stride, key0, src.keys_padded, d, unit);
    else if constexpr (P::kThreadKeyBlocks)
      widenMxfp4VtBlockScattered<S::kHeadDim, S::kBlockN>(v_image, src.v, row_stride, src.v_sf, key0,
                                                          src.keys_padded, src.v_shift, d, unit);
    else
      widenMxfp4VtUnit<S::kHeadDim, C::v_keys_permuted16>(v_image, src.v, row_stride, src.v_sf, key0,
                                                          src.keys_padded, src.v_shift, d, unit);
  }
}

// The pieces of a head's K/V images, all of them (every work tile of the head needs a prefix of
// its tiles, the longest all).
template <class C, class S> FA4JIT_DEVICE uint32_t kvHeadPieces(int seqlen_k) {
  return static_cast<uint32_t>((seqlen_k + S::kBlockN - 1) / S::kBlockN * KvPieces<C, S>::kPerTile);
}

// One widener warp: claims pieces of the K/V images of the kv head of its current work tile until
// none is left, writes each and counts it.
template <class C, class S> FA4JIT_DEVICE void widenKvHead(const attention::AttentionParams &p, const WidenerBuffers &wb) {
  for (;;) {
    uint32_t piece = 0u;
    if (laneNow() == 0)
      piece = atomicAdd(widenState(p, wb.batch(), wb.headsKv()).claimed + wb.currentKvHead(), 1u);
    piece = __shfl_sync(0xffffffffu, piece, 0);
    const int sk = wb.seqlenK();
    if (piece >= kvHeadPieces<C, S>(sk))
      return;
    widenKvPiece<C, S>(p, wb, wb.currentKvHead(), (sk + S::kBlockN - 1) / S::kBlockN, static_cast<int>(piece));
    fenceProxyAsyncGlobal();
    __syncwarp();
    if (laneNow() == 0) {
      __threadfence(); // (the warp's stores, ordered by __syncwarp, before the count: a release)
      atomicAdd(widenState(p, wb.batch(), wb.headsKv()).written + wb.currentKvHead(), 1u);
    }
  }
}

// The work tile after tile t of this CTA: the persistent stride, or in the causal grid that hands
// its tiles out at run time the next ticket (work_tiles.cuh).
template <class C, class S>
FA4JIT_DEVICE int nextWorkTile(const attention::AttentionParams &p, const WidenerBuffers &wb, int t) {
  if constexpr (S::kHandsOutWork)
    return atomicAdd(reinterpret_cast<int *>(p.work_counter), 1) + wb.grid();
  else
    return t + wb.grid();
}

// Work tile t, or m-block -1 past the last (the order's terms from the shape in shared memory).
template <class C, class S>
FA4JIT_DEVICE WorkTile widenerWorkTileOf(const attention::AttentionParams &p, const WidenerBuffers &wb, int t) {
  attention::AttentionParams shape = p; // (the fields the order reads)
  shape.seqlen_q = wb.seqlenQ(), shape.seqlen_k = wb.seqlenK(), shape.heads_q = wb.headsQ();
  shape.batch = wb.batch();
  if (t >= workTileCount(shape, C::block_m))
    return WorkTile{-1, 0, 0, C::block_m, -1};
  if constexpr (S::kHandsOutWork)
    return causalWorkTileOf(t, shape, C::block_m, causalGroupHeads(shape, kvImageBytesPerKey<S>()));
  else
    return workTileOf<C::causal>(t, shape, C::block_m, wb.grid());
}

// Warps 1..3 of the producer warpgroup: for each work tile of the CTA, in order, publish it in its
// slot (the first widener thread, the leader), write its Q image, then claim and write pieces of
// its kv head's K/V images; at the end an empty slot (m-block -1).
template <class C, class S> FA4JIT_DEVICE void widenAhead(const attention::AttentionParams &p, const WidenerBuffers &wb) {
  static_assert(C::persistent && C::kv_prewidened && !C::kv_multicast,
                "fused widening: the persistent kernel with prewidened images, no clusters");
  for (;;) {
    const int k = sharedWord(wb.iteration(widenerThreadNow() / 32)), s = k & 1;
    if (widenerThreadNow() == 0) {
      mbarrierWait(wb.tileEmpty(s), ((static_cast<uint32_t>(k) >> 1) & 1u) ^ 1u);
      const int t = sharedWord(wb.next());
      const WorkTile w = widenerWorkTileOf<C, S>(p, wb, t);
      if (w.m_block >= 0)
        setSharedWord(wb.next(), nextWorkTile<C, S>(p, wb, t));
      setSharedWord(wb.slot(s), w.m_block);
      setSharedWord(wb.slot(s) + 4, w.b * wb.headsQ() + w.hq);
    }
    namedBarrierSync(kWidenerBarrier, kWidenerThreads);
    const int m_block = sharedWord(wb.slot(s));
    if (m_block >= 0) {
      const int head = sharedWord(wb.slot(s) + 4), heads_q = wb.headsQ();
      const int blocks = (wb.seqlenQ() + S::kBlockRows - 1) / S::kBlockRows;
      uint8_t *q_image = reinterpret_cast<uint8_t *>(p.q_tiles) +
                         (static_cast<int64_t>(head) * blocks + m_block) * static_cast<int64_t>(S::kLayout.q_bytes);
      produceQTile<C, S::kHeadDim, S::kBlockRows, kWidenerThreads, 1>(q_image, p, m_block * S::kBlockRows,
                                                                      head % heads_q, head / heads_q,
                                                                      widenerThreadNow());
      fenceProxyAsyncGlobal();
    }
    __syncwarp();
    if (laneNow() == 0)
      mbarrierArrive(wb.tileFull(s));
    if (m_block < 0)
      break;
    widenKvHead<C, S>(p, wb);
    __syncwarp();
    if (laneNow() == 0) { // k + 1, with k read again (not held across the widening)
      const uint32_t at = wb.iteration(widenerThreadNow() / 32);
      setSharedWord(at, sharedWord(at) + 1);
    }
    __syncwarp();
  }
  if constexpr (S::kHandsOutWork)
    if (widenerThreadNow() == 0)
      finishHandingOut(p); // (after this CTA's last ticket)
  __syncwarp();
  if (laneNow() == 0)
    mbarrierArrive(wb.done());
}

// The tile mover: fn(work tile) for each work tile the widener warps publish, until the end.
template <class C, class Fn>
FA4JIT_DEVICE void receiveWidenedTiles(const attention::AttentionParams &p, const WidenerBuffers &wb, Fn &&fn) {
  for (int k = 0;; ++k) {
    const int s = k & 1;
    mbarrierWait(wb.tileFull(s), (static_cast<uint32_t>(k) >> 1) & 1u);
    const int m_block = sharedWord(wb.slot(s)), head = sharedWord(wb.slot(s) + 4);
    mbarrierArrive(wb.tileEmpty(s));
    if (m_block < 0)
      return;
    fenceProxyAsyncGlobal(); // (the Q image: the slot's arrives ordered its stores before)
    fn(WorkTile{m_block, head % p.heads_q, head / p.heads_q, C::block_m, m_block});
  }
}

// The tile mover, before its first copy of head_kv's K/V images: waits until every piece is
// written (`ready_head` remembers the last head it saw complete).
template <class C, class S>
FA4JIT_DEVICE void awaitKvHeadWidened(const attention::AttentionParams &p, int head_kv, int &ready_head) {
  if (head_kv == ready_head)
    return;
  const uint32_t *written = widenState(p, p.batch, p.heads_kv).written + head_kv;
  const uint32_t pieces = kvHeadPieces<C, S>(p.seqlen_k);
  while (loadAcquireGpu(written) < pieces)
    __nanosleep(64);
  fenceProxyAsyncGlobal();
  ready_head = head_kv;
}

// The tile mover, after its last copy: once its widener warps are through, the launch's last CTA
// zeroes the counters for the next launch.
FA4JIT_DEVICE void finishWidening(const attention::AttentionParams &p, const WidenerBuffers &wb) {
  mbarrierWait(wb.done(), 0u);
  const WidenState st = widenState(p, p.batch, p.heads_kv);
  __threadfence();
  if (atomicAdd(st.finished, 1u) == gridDim.x - 1) {
    const int heads = p.batch * p.heads_kv;
    for (int h = 0; h < heads; ++h)
      st.claimed[h] = 0u, st.written[h] = 0u;
    __threadfence();
    atomicExch(st.finished, 0u);
  }
}

} // namespace fa4jit::device::attention_sm90
