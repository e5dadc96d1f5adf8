#pragma once
// The persistent wgmma kernel widens its own operands (TileSpec::fused_widening): no widening
// passes before it. The passes (widen_kv.cuh, widen_q.cuh) move every FP4 byte through memory
// before the first attention tile starts, ~94 us of a 1.1 ms forward at 4096 keys (D128), time
// in which no tensor core works: scripts/device_profile.sh split directp 128 4096
// Here warps 1..3 of the producer warpgroup, idle beside the one thread that moves the tiles,
// write the same images while the consumers compute:
//   - K/V: the pieces of every kv head's images (KvPieces), taken in order from one ticket counter
//     of the launch (WidenState::claimed) by whichever widener warp of any CTA is free: heads in
//     the order the grid visits them (head-major without causal masking; the causal grid's
//     groups are runs of consecutive heads), each piece written once per forward; the head's
//     `written` counter counts it;
//   - Q: the first widener warp (the leader) writes the Q block of each of its CTA's work tiles
//     into its image (only this CTA reads it), a work tile or two ahead of the consumers, and
//     hands the tile to the tile mover in a slot (two slots); between those it takes K/V tickets.
// The thread that moves the tiles (producer_role.cuh) takes the work tiles from the slots, copies
// a Q image once its slot is full and a head's K/V images once its `written` count is complete.
// No wait can close a cycle: a claimed piece is written without waiting on anything, and warps 2
// and 3 of every CTA take tickets until none is left, whatever the tile movers wait for, so every
// head's count completes whatever CTAs are resident. The last CTA to finish zeroes the counters
// for the next launch.
// Memory order: the images are generic-proxy stores read by the bulk-copy engine (the async
// proxy), so writers fence the proxies (fence.proxy.async.global) before they signal, and the
// mover after it observes the signal and before it copies.
#include "fa4jit/attention/config.cuh"
#include "fa4jit/attention/params.cuh"
#include "fa4jit/attention_sm90/layout.cuh"
#include "fa4jit/attention_sm90/producer.cuh"
#include "fa4jit/attention_sm90/sync.cuh"
#include "fa4jit/attention_sm90/widen_staged.cuh"
#include "fa4jit/attention_sm90/work_tiles.cuh"

namespace fa4jit::device::attention_sm90 {

constexpr int kWidenerWarps = 3; // producer warps 1..3 (warp 0's lane 0 moves the tiles)

// The widener warps have 32 registers. Terms derived from the launch's shape and hoisted out of
// their loops (by NVVM or by ptxas) were held across the widening and spilled, and so were 64-bit
// pointers into shared memory and loop counters. So what they keep lives in shared memory at one
// 32-bit address (WidenerBuffers), read with volatile loads where it is used, which neither
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
  uint32_t *claimed;  // the next K/V ticket: head ticket / pieces, piece ticket % pieces
  uint32_t *written;  // [B * Hkv] pieces of the head's images written
};
FA4JIT_DEVICE WidenState widenState(const attention::AttentionParams &p) {
  uint32_t *w = reinterpret_cast<uint32_t *>(p.widen_state);
  return {w, w + 1, w + 2};
}

// Shared memory at the layout's widen_offset (kWidenerSharedBytes), by its shared-window address:
//   [0, 16)    tile_full[2]: slot k % 2 holds work tile k and its Q image is written (the leader's arrive)
//   [16, 32)   tile_empty[2]: the tile mover has read the slot (one arrive)
//   [32, 40)   done: the widener warps are through with the counters (an arrive per warp)
//   [40, 44)   the leader's next work tile       [44, 48) the leader's work-tile counter k
//   [48, 52)   1 once the leader has published the end
//   [56, 72)   slots[2][2]: m-block (-1: no more work tiles), query head b * Hq + hq
//   [72, 96)   the shape: seqlen_q, seqlen_k, heads_q, heads_kv, batch, grid (written by thread 0)
//   [128, ...) each widener warp's staging area (widen_staged.cuh), kStageBytes apart
struct WidenerBuffers {
  uint32_t addr;
  FA4JIT_DEVICE uint32_t tileFull(int s) const { return addr + 8 * s; }
  FA4JIT_DEVICE uint32_t tileEmpty(int s) const { return addr + 16 + 8 * s; }
  FA4JIT_DEVICE uint32_t done() const { return addr + 32; }
  FA4JIT_DEVICE uint32_t next() const { return addr + 40; }
  FA4JIT_DEVICE uint32_t iteration() const { return addr + 44; }
  FA4JIT_DEVICE uint32_t ended() const { return addr + 48; }
  FA4JIT_DEVICE uint32_t slot(int s) const { return addr + 56 + 8 * s; } // (m-block, head)
  FA4JIT_DEVICE uint32_t stage() const { return addr + 128 + kStageBytes * (widenerThreadNow() / 32); }
  FA4JIT_DEVICE int seqlenQ() const { return sharedWord(addr + 72); }
  FA4JIT_DEVICE int seqlenK() const { return sharedWord(addr + 76); }
  FA4JIT_DEVICE int headsQ() const { return sharedWord(addr + 80); }
  FA4JIT_DEVICE int headsKv() const { return sharedWord(addr + 84); }
  FA4JIT_DEVICE int batch() const { return sharedWord(addr + 88); }
  FA4JIT_DEVICE int grid() const { return sharedWord(addr + 92); }
  // (thread 0, with the mbarriers, before the barrier that starts the roles)
  FA4JIT_DEVICE void init(const attention::AttentionParams &p) const {
    for (int s = 0; s < 2; ++s) {
      mbarrierInit(tileFull(s), 1);
      mbarrierInit(tileEmpty(s), 1);
    }
    mbarrierInit(done(), kWidenerWarps);
    const int shape[6] = {p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.batch, static_cast<int>(gridDim.x)};
#pragma unroll
    for (int i = 0; i < 6; ++i)
      setSharedWord(addr + 72 + 4 * i, shape[i]);
    setSharedWord(next(), static_cast<int>(blockIdx.x));
    setSharedWord(iteration(), 0);
    setSharedWord(ended(), 0);
  }
};
static_assert(128 + kWidenerWarps * kStageBytes == kWidenerSharedBytes, "the layout's widener area");

// One K/V tile's image (widen_kv.cuh's bytes) in pieces of one staging batch each: K's 16-element
// units (kStageNvfp4Units a piece of NVFP4, kStageBlockUnits of E4M3), then V^T's units (kStageBlockUnits a piece: nvfp8 16-key
// FP8 vectors, directp 32-key MXFP4 blocks).
template <class C, class S> struct KvPieces {
  static constexpr bool kThreadKeyBlocks = attention::ThreadKeyBlocksOf<C>::value;
  static constexpr bool kNvfp8 = C::route == attention::Route::Nvfp8;
  static constexpr int kKUnitsPerRow = S::kHeadDim / 16;
  static constexpr int kKUnits = S::kBlockN * kKUnitsPerRow;
  static constexpr int kVUnitsPerRow = kNvfp8 ? S::kBlockN / 16 : S::kBlockN / 32;
  static constexpr int kVUnits = S::kHeadDim * kVUnitsPerRow;
  static constexpr bool kQkE4m3 = attention::QkE4m3Of<C>::value;
  static constexpr int kKUnitsPerPiece = kQkE4m3 ? kStageBlockUnits : kStageNvfp4Units;
  static constexpr int kKPieces = (kKUnits + kKUnitsPerPiece - 1) / kKUnitsPerPiece;
  static constexpr int kVPieces = (kVUnits + kStageBlockUnits - 1) / kStageBlockUnits;
  static constexpr int kPerTile = kKPieces + kVPieces;
  static_assert(C::route != attention::Route::Bf16, "the bf16 route has tensor-map tiles: nothing to widen");
};

// The pieces of one head's K/V images (every work tile of the head needs a prefix of its tiles).
template <class C, class S> FA4JIT_DEVICE uint32_t kvHeadPieces(int seqlen_k) {
  return static_cast<uint32_t>((seqlen_k + S::kBlockN - 1) / S::kBlockN * KvPieces<C, S>::kPerTile);
}

// Piece `piece` (tile piece / kPerTile) of kv head head_kv's images, by this widener warp.
template <class C, class S>
FA4JIT_DEVICE void widenKvPiece(const attention::AttentionParams &p, const WidenerBuffers &wb, int head_kv,
                                int piece) {
  using P = KvPieces<C, S>;
  constexpr Sm90Layout L = S::kLayout;
  const int tile = piece / P::kPerTile, part = piece % P::kPerTile;
  const int heads_kv = wb.headsKv(), sk = wb.seqlenK();
  const int b = head_kv / heads_kv, hkv = head_kv % heads_kv;
  const int tiles_per_head = (sk + S::kBlockN - 1) / S::kBlockN;
  uint8_t *image = reinterpret_cast<uint8_t *>(p.kv_tiles) +
                   (static_cast<int64_t>(head_kv) * tiles_per_head + tile) * static_cast<int64_t>(L.stage_bytes);
  const int key0 = tile * S::kBlockN;
  if (part < P::kKPieces) {
    const int row_stride = static_cast<int>(p.k_row_stride);
    const uint8_t *k = reinterpret_cast<const uint8_t *>(p.k) + b * p.k_batch_stride + hkv * p.k_head_stride +
                       key0 * row_stride;
    const int first = part * P::kKUnitsPerPiece;
    const int end = first + P::kKUnitsPerPiece < P::kKUnits ? first + P::kKUnitsPerPiece : P::kKUnits;
    const int k_valid = sk - key0 < S::kBlockN ? sk - key0 : S::kBlockN;
    if constexpr (P::kQkE4m3) {
      copyE4m3RowsStaged<S::kHeadDim, S::kBlockN, P::kThreadKeyBlocks>(image, k, row_stride, k_valid, first, end,
                                                                      wb.stage(), laneNow());
      return;
    }
    const uint8_t *k_sf = reinterpret_cast<const uint8_t *>(p.k_sf) + b * p.k_sf_batch_stride +
                          hkv * p.k_sf_head_stride;
    widenNvfp4RowsStaged<S::kHeadDim, S::kBlockN, P::kThreadKeyBlocks>(
        image, k, row_stride, k_sf, key0, k_valid,
        exp2Int(-C::qk_widen_shift), first, end, wb.stage(), laneNow());
    return;
  }
  const KvHeadSources src = kvHeadSources<C>(p, b, hkv, head_kv);
  uint8_t *v_image = image + (L.v_offset - L.k_offset);
  const int first = (part - P::kKPieces) * kStageBlockUnits;
  const int end = first + kStageBlockUnits < P::kVUnits ? first + kStageBlockUnits : P::kVUnits;
  const int keys_padded = (sk + 127) / 128 * 128; // (sk from the shape in shared memory)
  if constexpr (P::kNvfp8)
    copyFp8VtStaged<S::kHeadDim, S::kBlockN, C::v_keys_permuted16>(v_image, src.v, static_cast<int>(p.v_row_stride),
                                                                   key0, keys_padded, first, end, wb.stage(),
                                                                   laneNow());
  else
    widenMxfp4VtStaged<S::kHeadDim, S::kBlockN, C::v_keys_permuted16, P::kThreadKeyBlocks>(
        v_image, src.v, static_cast<int>(p.v_row_stride), src.v_sf, key0, keys_padded, src.v_shift, first, end,
        wb.stage(), laneNow());
}

// This widener warp takes the next K/V ticket and writes its piece; false once none is left.
template <class C, class S>
FA4JIT_DEVICE bool widenNextKvPiece(const attention::AttentionParams &p, const WidenerBuffers &wb) {
  uint32_t ticket = 0u;
  if (laneNow() == 0)
    ticket = atomicAdd(widenState(p).claimed, 1u);
  ticket = __shfl_sync(0xffffffffu, ticket, 0);
  const uint32_t pieces = kvHeadPieces<C, S>(wb.seqlenK());
  if (ticket >= pieces * static_cast<uint32_t>(wb.batch() * wb.headsKv()))
    return false;
  const int head_kv = static_cast<int>(ticket / pieces);
  widenKvPiece<C, S>(p, wb, head_kv, static_cast<int>(ticket % pieces));
  fenceProxyAsyncGlobal();
  __syncwarp();
  if (laneNow() == 0) {
    __threadfence(); // (the warp's stores, ordered by __syncwarp, before the count: a release)
    atomicAdd(widenState(p).written + head_kv, 1u);
  }
  return true;
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

// The leader (the first widener warp), once the tile mover has read slot k % 2's previous tile:
// publishes the CTA's work tile k there, with its Q image written (staged in batches), or the end.
template <class C, class S> FA4JIT_DEVICE void publishWorkTile(const attention::AttentionParams &p, const WidenerBuffers &wb) {
  const int k = sharedWord(wb.iteration()), s = k & 1;
  if (laneNow() == 0) {
    const int t = sharedWord(wb.next());
    const WorkTile w = widenerWorkTileOf<C, S>(p, wb, t);
    if (w.m_block >= 0)
      setSharedWord(wb.next(), nextWorkTile<C, S>(p, wb, t));
    setSharedWord(wb.slot(s), w.m_block);
    setSharedWord(wb.slot(s) + 4, w.b * wb.headsQ() + w.hq);
  }
  __syncwarp();
  const int m_block = sharedWord(wb.slot(s));
  if (m_block >= 0) {
    constexpr int kUnits = S::kBlockRows * (S::kHeadDim / 16);
    const int head = sharedWord(wb.slot(s) + 4), heads_q = wb.headsQ(), sq = wb.seqlenQ();
    const int hq = head % heads_q, b = head / heads_q, m0 = m_block * S::kBlockRows;
    const int blocks = (sq + S::kBlockRows - 1) / S::kBlockRows;
    uint8_t *image = reinterpret_cast<uint8_t *>(p.q_tiles) +
                     (static_cast<int64_t>(head) * blocks + m_block) * static_cast<int64_t>(S::kLayout.q_bytes);
    const uint8_t *q = reinterpret_cast<const uint8_t *>(p.q) + b * p.q_batch_stride + hq * p.q_head_stride +
                       m0 * p.q_row_stride;
    const int q_valid = sq - m0 < S::kBlockRows ? sq - m0 : S::kBlockRows;
    if constexpr (attention::QkE4m3Of<C>::value) {
#pragma unroll 1
      for (int first = 0; first < kUnits; first += kStageBlockUnits)
        copyE4m3RowsStaged<S::kHeadDim, S::kBlockRows, false>(
            image, q, static_cast<int>(p.q_row_stride), q_valid, first,
            first + kStageBlockUnits < kUnits ? first + kStageBlockUnits : kUnits, wb.stage(), laneNow());
    } else {
      const uint8_t *q_sf =
          reinterpret_cast<const uint8_t *>(p.q_sf) + b * p.q_sf_batch_stride + hq * p.q_sf_head_stride;
#pragma unroll 1
      for (int first = 0; first < kUnits; first += kStageNvfp4Units)
        widenNvfp4RowsStaged<S::kHeadDim, S::kBlockRows, false>(
            image, q, static_cast<int>(p.q_row_stride), q_sf, m0, q_valid, exp2Int(-C::qk_widen_shift), first,
            first + kStageNvfp4Units < kUnits ? first + kStageNvfp4Units : kUnits, wb.stage(), laneNow());
    }
    fenceProxyAsyncGlobal();
  }
  __syncwarp();
  if (laneNow() == 0) { // (k, its slot and tile read again: not held across the Q widening)
    const int k_now = sharedWord(wb.iteration());
    mbarrierArrive(wb.tileFull(k_now & 1));
    setSharedWord(wb.iteration(), k_now + 1);
    if (sharedWord(wb.slot(k_now & 1)) < 0)
      setSharedWord(wb.ended(), 1);
  }
  __syncwarp();
}

// Whether the leader may publish work tile k (k: its counter): slot k % 2 is free once the tile
// mover has read tile k - 2 from it. The grid that hands its work tiles out at run time waits
// until the mover has read tile k - 1 (`one_ahead`): its next ticket is then taken when the CTA
// starts its current tile, as without fused widening. Two tiles ahead, the CTAs took their last
// tickets earlier and the grid ended less balanced.
template <bool kOneAhead> FA4JIT_DEVICE bool leaderSlotFree(const WidenerBuffers &wb, bool block) {
  const int k = sharedWord(wb.iteration());
  if (kOneAhead && k == 0)
    return true;
  const int read = kOneAhead ? k - 1 : k - 2; // (the tile the mover must have read; -2, -1: none)
  const uint32_t bar = wb.tileEmpty(read & 1), parity = (static_cast<uint32_t>(read) >> 1) & 1u;
  int free = 1;
  if (laneNow() == 0) {
    if (block)
      mbarrierWait(bar, parity);
    else
      asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.s32 %0, 1, 0, p;\n}\n"
                   : "=r"(free)
                   : "r"(bar), "r"(parity)
                   : "memory");
  }
  return __shfl_sync(0xffffffffu, free, 0) != 0;
}

// Warps 1..3 of the producer warpgroup. The leader publishes each of its CTA's work tiles (with its
// Q image) as soon as a slot is free, and otherwise takes K/V tickets; the other two take K/V
// tickets until none is left.
template <class C, class S> FA4JIT_DEVICE void widenAhead(const attention::AttentionParams &p, const WidenerBuffers &wb) {
  static_assert(C::persistent && C::kv_prewidened && !C::kv_multicast,
                "fused widening: the persistent kernel with prewidened images, no clusters");
  if (widenerThreadNow() < 32) {
    for (;;) {
      if (sharedWord(wb.ended()) == 0 && leaderSlotFree<S::kHandsOutWork>(wb, false))
        publishWorkTile<C, S>(p, wb);
      else if (!widenNextKvPiece<C, S>(p, wb)) {
        if (sharedWord(wb.ended()) != 0)
          break;
        leaderSlotFree<S::kHandsOutWork>(wb, true); // (no K/V ticket left: wait for the slot)
      }
    }
    if constexpr (S::kHandsOutWork)
      if (laneNow() == 0)
        finishHandingOut(p); // (after this CTA's last work-tile ticket)
  } else {
    while (widenNextKvPiece<C, S>(p, wb)) {
    }
  }
  __syncwarp();
  if (laneNow() == 0)
    mbarrierArrive(wb.done());
}

// The tile mover: fn(work tile) for each work tile the leader publishes, until the end.
template <class C, class Fn>
FA4JIT_DEVICE void receiveWidenedTiles(const attention::AttentionParams &p, const WidenerBuffers &wb, Fn &&fn) {
  for (int k = 0;; ++k) {
    const int s = k & 1;
    mbarrierWait(wb.tileFull(s), (static_cast<uint32_t>(k) >> 1) & 1u);
    const int m_block = sharedWord(wb.slot(s)), head = sharedWord(wb.slot(s) + 4);
    mbarrierArrive(wb.tileEmpty(s));
    if (m_block < 0)
      return;
    fenceProxyAsyncGlobal(); // (the Q image: the leader's arrive ordered its stores before)
    fn(WorkTile{m_block, head % p.heads_q, head / p.heads_q, C::block_m, m_block});
  }
}

// The tile mover, before its first copy of head_kv's K/V images: waits until every piece is
// written (`ready_head` remembers the last head it saw complete).
template <class C, class S>
FA4JIT_DEVICE void awaitKvHeadWidened(const attention::AttentionParams &p, int head_kv, int &ready_head) {
  if (head_kv == ready_head)
    return;
  const uint32_t *written = widenState(p).written + head_kv;
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
  const WidenState st = widenState(p);
  __threadfence();
  if (atomicAdd(st.finished, 1u) == gridDim.x - 1) {
    const int heads = p.batch * p.heads_kv;
    *st.claimed = 0u;
    for (int h = 0; h < heads; ++h)
      st.written[h] = 0u;
    __threadfence();
    atomicExch(st.finished, 0u);
  }
}

} // namespace fa4jit::device::attention_sm90
