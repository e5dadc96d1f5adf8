#pragma once
// Decode over the paged cache (params.cuh has the layout; docs/NUMERICS.md §5.2 the arithmetic),
// and the combine that merges its split-KV partial states. The code generator emits a struct with
// exactly these static constexpr members and instantiates decodeAttention and combineSplits:
//
//   struct MyConfig {
//     static constexpr int head_dim;   // 64, 128
//     static constexpr int page_size;  // tokens per page: 16, 32, 64, 128, 256
//     static constexpr int warps;      // 4, 8
//     static constexpr int value_format; // 0: E4M3 V with a row scale, 1: MXFP4 V
//     static constexpr int kv_stages;  // 0: steps loaded into registers; 2, 3: a shared-memory ring
//   };
//
// Memory-bound by design: every CTA streams one split of one sequence's K/V for up to 16 query rows
// of one kv head (the GQA group, times the queries per sequence), so each cache byte is read once
// per row block. Warps take 16-key steps in turn. With kv_stages 0 a lane loads its K and V for the
// next step straight into registers; with kv_stages > 0 each warp keeps a ring of that many steps
// in shared memory, filled by cp.async kv_stages - 1 steps ahead (more bytes in flight, and none of
// them held in registers), and reads a step's operands from it. Either way they are widened
// exactly to BF16 for mma.sync m16n8k16:
//  - S = Q K^T: lane (g = lane / 4, t = lane % 4) holds the keys g and 8 + g of the step, head dim
//    elements [t D/4, (t+1) D/4) (one vector load of D/8 payload bytes). k-step s pairs the
//    elements t D/4 + 4s + {0,1} and + {2,3} of Q and K, the same permutation of the head dim on
//    both sides of the sum.
//  - O += P V: the lane holds V of the keys 2t, 2t + 1, 2t + 8, 2t + 9 (the keys of its P
//    fragment) over head dim [g D/8, (g+1) D/8); n-tile j covers the columns g D/8 + j. FP8 V's
//    row scale is folded into P; MXFP4 V is widened row by row with its block's power of two.
#include "fa4jit/common.cuh"
#include "fa4jit/paged/params.cuh"
#include "fa4jit/paged/widen.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
namespace fa4jit::device::paged {

template <class C> struct DecodeTraits {
  static constexpr int kHeadDim = C::head_dim;
  static constexpr int kPageSize = C::page_size;
  static constexpr int kWarps = C::warps;
  static_assert(kHeadDim == 64 || kHeadDim == 128, "decode head_dim must be 64 or 128");
  static_assert(kPageSize >= 16 && kPageSize <= 256 && (kPageSize & (kPageSize - 1)) == 0,
                "page_size must be a power of two in [16, 256]");
  static_assert(kWarps == 4 || kWarps == 8, "warps must be 4 or 8");
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRows = kDecodeRowsPerCta;
  static constexpr int kKSteps = kHeadDim / 16;     // k-steps of S = Q K^T
  static constexpr int kWords = kHeadDim / 32;      // 32-bit words of K (and of V) per lane per key
  static constexpr int kVTiles = kHeadDim / 8;      // n-tiles of O
  static constexpr int kScalesPerLane = kHeadDim / 64;
  static constexpr bool kMxfp4V = C::value_format == 1;
  static constexpr int kVWords = kMxfp4V ? kHeadDim / 64 : kHeadDim / 32; // V words per lane per key
  static constexpr int kOStride = kHeadDim + 4;     // shared O rows (decodeSharedBytes)
  static constexpr int kStages = C::kv_stages;
  static_assert(kStages == 0 || kStages == 2 || kStages == 3, "kv_stages must be 0, 2 or 3");
  // One step in the ring (decodeStepBytes): each array's 16 rows, at these byte offsets.
  static constexpr int kKCodeBytes = decodeStepKCodeBytes(kHeadDim);
  static constexpr int kKScaleBytes = decodeStepKScaleBytes(kHeadDim);
  static constexpr int kVCodeBytes = decodeStepVCodeBytes(kHeadDim, C::value_format);
  static constexpr int kVScaleBytes = decodeStepVScaleBytes(kHeadDim, C::value_format);
  static constexpr int kKScaleAt = kKCodeBytes, kKRowAt = kKScaleAt + kKScaleBytes, kVCodeAt = kKRowAt + 64;
  static constexpr int kVScaleAt = kVCodeAt + kVCodeBytes;
  static constexpr int kStepBytes = kVScaleAt + kVScaleBytes;
  static_assert(kStepBytes == decodeStepBytes(kHeadDim, C::value_format), "ring layout and decodeStepBytes differ");
  static_assert(kKScaleBytes % 16 == 0 && kVScaleBytes % 16 == 0, "ring arrays move in 16-byte pieces");
};

FA4JIT_DEVICE void mmaBf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

FA4JIT_DEVICE uint32_t packBf16x2(float lo, float hi) {
  uint32_t w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}

template <int kWords> FA4JIT_DEVICE void loadWords(uint64_t address, uint32_t (&w)[kWords]) {
  if constexpr (kWords == 4) {
    const uint4 x = __ldg(reinterpret_cast<const uint4 *>(address));
    w[0] = x.x, w[1] = x.y, w[2] = x.z, w[3] = x.w;
  } else if constexpr (kWords == 2) {
    const uint2 x = __ldg(reinterpret_cast<const uint2 *>(address));
    w[0] = x.x, w[1] = x.y;
  } else {
    w[0] = __ldg(reinterpret_cast<const uint32_t *>(address));
  }
}

// What one lane loads for one 16-key step.
template <class T> struct StepOperands {
  uint32_t k[2][T::kWords];   // keys g, 8 + g: payload of head dim [t D/4, (t+1) D/4)
  uint32_t k_scales[2];       // their UE4M3 block scales (kScalesPerLane bytes each)
  float2 k_row[2], v_row[2];  // row scales of the keys 2t, 2t+1 and 2t+8, 2t+9 (v_row: FP8 V)
  uint32_t v[4][T::kVWords];  // keys 2t, 2t+1, 2t+8, 2t+9: payload of head dim [g D/8, (g+1) D/8)
  uint32_t v_scales;          // MXFP4 V: those keys' UE8M0 block scales, one byte each
};

template <class T>
FA4JIT_DEVICE void loadStep(const PagedCacheView &c, int64_t first_row, int g, int t, StepOperands<T> &s) {
  constexpr int D = T::kHeadDim;
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    const int64_t row = first_row + 8 * n + g;
    loadWords<T::kWords>(c.k_codes + row * (D / 2) + t * (D / 8), s.k[n]);
    const uint8_t *scales = reinterpret_cast<const uint8_t *>(c.k_block_scales) + row * (D / 16) + t * T::kScalesPerLane;
    s.k_scales[n] = T::kScalesPerLane == 2 ? __ldg(reinterpret_cast<const uint16_t *>(scales)) : __ldg(scales);
    s.k_row[n] = __ldg(reinterpret_cast<const float2 *>(c.k_row_scales) + (first_row + 8 * n + 2 * t) / 2);
    if constexpr (!T::kMxfp4V)
      s.v_row[n] = __ldg(reinterpret_cast<const float2 *>(c.v_row_scales) + (first_row + 8 * n + 2 * t) / 2);
  }
  s.v_scales = 0u;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t row = first_row + 2 * t + (i & 1) + 8 * (i >> 1);
    if constexpr (T::kMxfp4V) {
      loadWords<T::kVWords>(c.v_codes + row * (D / 2) + g * (D / 16), s.v[i]);
      s.v_scales |= static_cast<uint32_t>(__ldg(reinterpret_cast<const uint8_t *>(c.v_block_scales) + row * (D / 32) +
                                                 g * (D / 8) / 32))
                    << (8 * i);
    } else {
      loadWords<T::kVWords>(c.v_codes + row * D + g * (D / 8), s.v[i]);
    }
  }
}

// ---- The shared-memory ring (kv_stages > 0) ----

FA4JIT_DEVICE void copyAsync16(uint32_t shared_address, uint64_t global_address) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address), "l"(global_address) : "memory");
}
FA4JIT_DEVICE void commitAsyncCopies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending> FA4JIT_DEVICE void waitAsyncCopies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// The warp copies the 16 rows of one step (first_row: the step's first cache row) into its ring
// stage at `stage` (a shared address): every array's rows are contiguous in the cache and in the
// stage, so each moves in 16-byte pieces, the warp's lanes taking turns.
template <class T> FA4JIT_DEVICE void issueStep(const PagedCacheView &c, int64_t first_row, uint32_t stage, int lane) {
  constexpr int D = T::kHeadDim;
  const uint64_t k_codes = c.k_codes + static_cast<uint64_t>(first_row) * (D / 2);
  const uint64_t v_codes = c.v_codes + static_cast<uint64_t>(first_row) * (T::kVCodeBytes / 16);
#pragma unroll
  for (int i = lane; i < T::kKCodeBytes / 16; i += 32)
    copyAsync16(stage + 16 * i, k_codes + 16 * i);
#pragma unroll
  for (int i = lane; i < T::kVCodeBytes / 16; i += 32)
    copyAsync16(stage + T::kVCodeAt + 16 * i, v_codes + 16 * i);
  // The small arrays: K block scales, K row scales and V's scales, one piece per lane.
  constexpr int kKScalePieces = T::kKScaleBytes / 16, kVScalePieces = T::kVScaleBytes / 16;
  if (lane < kKScalePieces) {
    copyAsync16(stage + T::kKScaleAt + 16 * lane, c.k_block_scales + static_cast<uint64_t>(first_row) * (D / 16) + 16 * lane);
  } else if (lane < kKScalePieces + 4) {
    const int i = lane - kKScalePieces;
    copyAsync16(stage + T::kKRowAt + 16 * i, c.k_row_scales + static_cast<uint64_t>(first_row) * 4 + 16 * i);
  } else if (lane < kKScalePieces + 4 + kVScalePieces) {
    const int i = lane - kKScalePieces - 4;
    if constexpr (T::kMxfp4V)
      copyAsync16(stage + T::kVScaleAt + 16 * i, c.v_block_scales + static_cast<uint64_t>(first_row) * (D / 32) + 16 * i);
    else
      copyAsync16(stage + T::kVScaleAt + 16 * i, c.v_row_scales + static_cast<uint64_t>(first_row) * 4 + 16 * i);
  }
}

// What loadStep reads from the cache, read from a ring stage (rows 0..15 of the step).
template <class T> FA4JIT_DEVICE void readStep(const uint8_t *stage, int g, int t, StepOperands<T> &s) {
  constexpr int D = T::kHeadDim;
  const auto words = [](const uint8_t *at, uint32_t *w) {
    if constexpr (T::kWords == 4) {
      const uint4 x = *reinterpret_cast<const uint4 *>(at);
      w[0] = x.x, w[1] = x.y, w[2] = x.z, w[3] = x.w;
    } else {
      const uint2 x = *reinterpret_cast<const uint2 *>(at);
      w[0] = x.x, w[1] = x.y;
    }
  };
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    const int row = 8 * n + g;
    words(stage + row * (D / 2) + t * (D / 8), s.k[n]);
    const uint8_t *scales = stage + T::kKScaleAt + row * (D / 16) + t * T::kScalesPerLane;
    s.k_scales[n] = T::kScalesPerLane == 2 ? *reinterpret_cast<const uint16_t *>(scales) : *scales;
    s.k_row[n] = *reinterpret_cast<const float2 *>(stage + T::kKRowAt + (8 * n + 2 * t) * 4);
    if constexpr (!T::kMxfp4V)
      s.v_row[n] = *reinterpret_cast<const float2 *>(stage + T::kVScaleAt + (8 * n + 2 * t) * 4);
  }
  s.v_scales = 0u;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = 2 * t + (i & 1) + 8 * (i >> 1);
    if constexpr (T::kMxfp4V) {
      const uint8_t *at = stage + T::kVCodeAt + row * (D / 2) + g * (D / 16);
      if constexpr (T::kVWords == 2) {
        const uint2 x = *reinterpret_cast<const uint2 *>(at);
        s.v[i][0] = x.x, s.v[i][1] = x.y;
      } else {
        s.v[i][0] = *reinterpret_cast<const uint32_t *>(at);
      }
      s.v_scales |= static_cast<uint32_t>(stage[T::kVScaleAt + row * (D / 32) + g * (D / 8) / 32]) << (8 * i);
    } else {
      words(stage + T::kVCodeAt + row * D + g * (D / 8), s.v[i]);
    }
  }
}

// Element j (of the lane's head dim slice) of MXFP4 V rows a and b as one BF16 pair: the rows were
// widened pairwise (wa / wb hold elements 2m, 2m + 1 in word m).
template <int j> FA4JIT_DEVICE uint32_t mxPairOfRows(const uint32_t *wa, const uint32_t *wb) {
  return __byte_perm(wa[j / 2], wb[j / 2], j % 2 ? 0x7632u : 0x5410u);
}

// O += P V for MXFP4 V: n-tile j takes element j of the rows of keys (2t, 2t + 1) and (2t + 8, 2t + 9).
template <class T, int j = 0>
FA4JIT_DEVICE void mxPvProducts(const uint32_t (&wide)[4][T::kVTiles / 2], const uint32_t (&pa)[4],
                                const uint32_t (&pa_lo)[4], float (&o)[T::kVTiles][4]) {
  if constexpr (j < T::kVTiles) {
    const uint32_t b0 = mxPairOfRows<j>(wide[0], wide[1]), b1 = mxPairOfRows<j>(wide[2], wide[3]);
    mmaBf16(o[j], pa, b0, b1);
    mmaBf16(o[j], pa_lo, b0, b1);
    mxPvProducts<T, j + 1>(wide, pa, pa_lo, o);
  }
}

// grid (splits, kv_heads * row_blocks, batch), block kThreads, dynamic shared decodeSharedBytes.
template <class C> FA4JIT_DEVICE void decodeAttention(const DecodeParams &p) {
  using T = DecodeTraits<C>;
  constexpr int D = T::kHeadDim;
  extern __shared__ float4 decode_shared[];
  float *shared_o = reinterpret_cast<float *>(decode_shared);     // [16][kOStride]
  float *shared_m = shared_o + T::kRows * T::kOStride;            // [warps][16]
  float *shared_l = shared_m + T::kWarps * T::kRows;              // [warps][16]
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const int split = blockIdx.x, b = blockIdx.z;
  const int kv_head = blockIdx.y / p.row_blocks, row_block = blockIdx.y % p.row_blocks;
  const int group = p.q_heads / p.cache.kv_heads;
  const int rows_total = group * p.queries;
  const PagedCacheView &c = p.cache;
  const float neg_inf = bitsAsFloat(0xFF800000u);

  const int seq_len_in = reinterpret_cast<const int32_t *>(p.seq_lens)[b];
  // A length past the block table's capacity makes the sequence's rows NaN (nothing is read).
  const bool bad_length = seq_len_in < 0 || static_cast<int64_t>(seq_len_in) > static_cast<int64_t>(p.block_table_stride) * T::kPageSize;
  const int seq_len = bad_length ? 0 : seq_len_in;
  const int chunk = ((seq_len + p.splits - 1) / p.splits + 15) / 16 * 16;
  const int key_begin = split * chunk, key_end = min(seq_len, key_begin + chunk);

  // This lane's two rows (g and g + 8 of the tile): query token, head, and last visible key.
  int row_limit[2];
  uint32_t qa[T::kKSteps][4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = row_block * T::kRows + g + 8 * half;
    uint32_t w[2 * T::kKSteps];
#pragma unroll
    for (int i = 0; i < 2 * T::kKSteps; ++i)
      w[i] = 0u;
    row_limit[half] = -1; // (padding rows see no key)
    if (r < rows_total) {
      const int query = r / group, head = kv_head * group + r % group;
      row_limit[half] = query + seq_len - p.queries;
      const uint64_t src = p.q + (b * p.q_batch_stride + head * p.q_head_stride + query * p.q_row_stride + t * (D / 4)) * 2;
#pragma unroll
      for (int i = 0; i < T::kKSteps / 2; ++i) {
        const uint4 x = *reinterpret_cast<const uint4 *>(src + 16 * i);
        w[4 * i] = x.x, w[4 * i + 1] = x.y, w[4 * i + 2] = x.z, w[4 * i + 3] = x.w;
      }
    }
#pragma unroll
    for (int s = 0; s < T::kKSteps; ++s) {
      qa[s][half] = w[2 * s];         // a0 / a1: elements 4s, 4s + 1
      qa[s][2 + half] = w[2 * s + 1]; // a2 / a3: elements 4s + 2, 4s + 3
    }
  }

  float m[2] = {neg_inf, neg_inf}, l[2] = {0.0f, 0.0f};
  float o[T::kVTiles][4];
#pragma unroll
  for (int j = 0; j < T::kVTiles; ++j)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

  const int32_t *block_table = reinterpret_cast<const int32_t *>(p.block_table) + static_cast<int64_t>(b) * p.block_table_stride;
  bool bad_page = false;
  // The page of a step's keys, read two steps ahead: its load is not on the path of the next
  // step's operand loads.
  const auto pageOf = [&](int key0) { return key0 < key_end ? block_table[key0 / T::kPageSize] : 0; };
  const auto firstRow = [&](int key0, int page) {
    if (page < 0 || page >= c.pages) { // (read page 0 instead; the rows that see these keys become NaN)
      bad_page = true;
      page = 0;
    }
    return cacheRowIndex(c, page, kv_head, key0 % T::kPageSize);
  };
  constexpr int kStride = 16 * T::kWarps;

  // kv_stages 0: the next step's operands in registers. kv_stages S > 0: this warp's ring of S steps
  // after the merge area; steps key0 + kStride .. key0 + (S - 1) kStride are in flight while key0's
  // computes, one cp.async group each (empty past the split's end, so that the counts stay uniform).
  StepOperands<T> next;
  [[maybe_unused]] const uint32_t ring =
      static_cast<uint32_t>(__cvta_generic_to_shared(decode_shared)) + decodeMergeBytes(D, T::kWarps) +
      static_cast<uint32_t>(warp * T::kStages * T::kStepBytes);
  [[maybe_unused]] const uint8_t *ring_bytes =
      reinterpret_cast<const uint8_t *>(decode_shared) + decodeMergeBytes(D, T::kWarps) + warp * T::kStages * T::kStepBytes;
  int key0 = key_begin + 16 * warp;
  int page_after;
  if constexpr (T::kStages == 0) {
    if (key0 < key_end)
      loadStep<T>(c, firstRow(key0, pageOf(key0)), g, t, next);
    page_after = pageOf(key0 + kStride);
  } else {
#pragma unroll
    for (int s = 0; s < T::kStages - 1; ++s) {
      const int k = key0 + s * kStride;
      if (k < key_end)
        issueStep<T>(c, firstRow(k, pageOf(k)), ring + s * T::kStepBytes, lane);
      commitAsyncCopies();
    }
    page_after = pageOf(key0 + (T::kStages - 1) * kStride);
  }
  for (int step = 0; key0 < key_end; key0 += kStride, ++step) {
    StepOperands<T> cur;
    if constexpr (T::kStages == 0) {
      cur = next;
      if (key0 + kStride < key_end) // in flight while this step computes
        loadStep<T>(c, firstRow(key0 + kStride, page_after), g, t, next);
      page_after = pageOf(key0 + 2 * kStride);
    } else {
      // This step's group is the oldest of the S - 1 in flight; the warp's lanes copied its pieces.
      waitAsyncCopies<T::kStages - 2>();
      __syncwarp();
      readStep<T>(ring_bytes + (step % T::kStages) * T::kStepBytes, g, t, cur);
      __syncwarp(); // (every lane has read the stage that the copy below reuses, the one before it)
      const int ahead = key0 + (T::kStages - 1) * kStride;
      if (ahead < key_end)
        issueStep<T>(c, firstRow(ahead, page_after), ring + ((step + T::kStages - 1) % T::kStages) * T::kStepBytes,
                     lane);
      commitAsyncCopies();
      page_after = pageOf(ahead + kStride);
    }

    // S = Q K^T for the keys key0 + [0, 8) and key0 + [8, 16)
    float acc[2][4];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
      uint32_t scale[T::kScalesPerLane];
#pragma unroll
      for (int i = 0; i < T::kScalesPerLane; ++i)
        scale[i] = ue4m3ToBf16x2(cur.k_scales[n] >> (8 * i));
#pragma unroll
      for (int s = 0; s < T::kKSteps; ++s) {
        uint32_t b0, b1;
        e2m1x4ToBf16(cur.k[n][s / 2] >> (16 * (s % 2)), scale[s / 4], b0, b1);
        mmaBf16(acc[n], qa[s], b0, b1);
      }
    }
    // Scores in the log2 domain, masked; the step's maximum per row
    const float k_row[4] = {cur.k_row[0].x, cur.k_row[0].y, cur.k_row[1].x, cur.k_row[1].y};
    float x[2][4], step_max[2] = {neg_inf, neg_inf};
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + 8 * n + 2 * t + (e & 1), half = e / 2;
        const bool visible = key < key_end && key <= row_limit[half];
        x[n][e] = visible ? acc[n][e] * (k_row[2 * n + (e & 1)] * p.score_scale) : neg_inf;
        step_max[half] = fmaxf(step_max[half], x[n][e]);
      }
    float alpha[2], p_scaled[2][4];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      step_max[half] = fmaxf(step_max[half], __shfl_xor_sync(0xFFFFFFFFu, step_max[half], 1));
      step_max[half] = fmaxf(step_max[half], __shfl_xor_sync(0xFFFFFFFFu, step_max[half], 2));
      const float m_new = fmaxf(m[half], step_max[half]);
      alpha[half] = m_new == neg_inf ? 1.0f : exp2Hw(m[half] - m_new);
      m[half] = m_new;
    }
    // What multiplies a key's P: FP8 V's row scale, or for MXFP4 V 1 (NaN for a row that held a NaN)
    float v_row[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (T::kMxfp4V)
        v_row[i] = ((cur.v_scales >> (8 * i)) & 0xFFu) == kMxNaNScale ? bitsAsFloat(0x7FC00000u) : 1.0f;
      else
        v_row[i] = i < 2 ? (i == 0 ? cur.v_row[0].x : cur.v_row[0].y) : (i == 2 ? cur.v_row[1].x : cur.v_row[1].y);
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float m_use = m[half] == neg_inf ? 0.0f : m[half];
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 2 * half; e < 2 * half + 2; ++e) {
          const float pe = exp2Hw(x[n][e] - m_use);
          sum += pe;
          // (a key that is not visible weighs 0 even where its row scale is not finite)
          p_scaled[n][e] = x[n][e] == neg_inf ? 0.0f : pe * v_row[2 * n + (e & 1)];
        }
      l[half] = l[half] * alpha[half] + sum;
    }
    // (the row maxima settle after a few steps: most steps skip the rescale of O)
    if (__any_sync(0xFFFFFFFFu, alpha[0] != 1.0f || alpha[1] != 1.0f))
#pragma unroll
      for (int j = 0; j < T::kVTiles; ++j)
        o[j][0] *= alpha[0], o[j][1] *= alpha[0], o[j][2] *= alpha[1], o[j][3] *= alpha[1];
    // P in two BF16 terms, hi = BF16(p) and lo = BF16(p - hi): 16 significant bits where one BF16
    // keeps 8 (whose rounding alone would cost about 1e-3 of rel-L2 in O).
    uint32_t pa[4], pa_lo[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float lo_in = p_scaled[i / 2][2 * (i % 2)], hi_in = p_scaled[i / 2][2 * (i % 2) + 1];
      pa[i] = packBf16x2(lo_in, hi_in);
      pa_lo[i] = packBf16x2(lo_in - bitsAsFloat(pa[i] << 16), hi_in - bitsAsFloat(pa[i] & 0xFFFF0000u));
    }
    // O += P V: n-tile j is the head dim column g D/8 + j
    if constexpr (T::kMxfp4V) {
      uint32_t wide[4][T::kVTiles / 2]; // each key row's elements, widened in pairs
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t scale = ue8m0ToBf16x2((cur.v_scales >> (8 * i)) & 0xFFu);
#pragma unroll
        for (int q = 0; q < T::kVTiles / 4; ++q)
          e2m1x4ToBf16(cur.v[i][q / 2] >> (16 * (q % 2)), scale, wide[i][2 * q], wide[i][2 * q + 1]);
      }
      mxPvProducts<T>(wide, pa, pa_lo, o);
    } else
#pragma unroll
    for (int j = 0; j < T::kVTiles; ++j) {
      constexpr int kBytes = 4;
      const int word = j / kBytes;
      uint32_t b0, b1;
      switch (j % kBytes) {
      case 0:
        b0 = e4m3PairToBf16<0>(cur.v[0][word], cur.v[1][word]), b1 = e4m3PairToBf16<0>(cur.v[2][word], cur.v[3][word]);
        break;
      case 1:
        b0 = e4m3PairToBf16<1>(cur.v[0][word], cur.v[1][word]), b1 = e4m3PairToBf16<1>(cur.v[2][word], cur.v[3][word]);
        break;
      case 2:
        b0 = e4m3PairToBf16<2>(cur.v[0][word], cur.v[1][word]), b1 = e4m3PairToBf16<2>(cur.v[2][word], cur.v[3][word]);
        break;
      default:
        b0 = e4m3PairToBf16<3>(cur.v[0][word], cur.v[1][word]), b1 = e4m3PairToBf16<3>(cur.v[2][word], cur.v[3][word]);
        break;
      }
      mmaBf16(o[j], pa, b0, b1);
      mmaBf16(o[j], pa_lo, b0, b1);
    }
  }

  if constexpr (T::kStages > 0)
    waitAsyncCopies<0>(); // (no copy into the ring outlives the loop)
  // The row sums over the four lanes of a row, then the warps' states merged in shared memory in
  // warp order (the same bits every run).
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    l[half] += __shfl_xor_sync(0xFFFFFFFFu, l[half], 1);
    l[half] += __shfl_xor_sync(0xFFFFFFFFu, l[half], 2);
  }
  if (t == 0) {
    shared_m[warp * T::kRows + g] = m[0], shared_m[warp * T::kRows + g + 8] = m[1];
    shared_l[warp * T::kRows + g] = l[0], shared_l[warp * T::kRows + g + 8] = l[1];
  }
  for (int i = threadIdx.x; i < T::kRows * T::kOStride; i += T::kThreads)
    shared_o[i] = 0.0f;
  __syncthreads();
  float weight[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float m_all = neg_inf;
    for (int w = 0; w < T::kWarps; ++w)
      m_all = fmaxf(m_all, shared_m[w * T::kRows + g + 8 * half]);
    weight[half] = m[half] == neg_inf ? 0.0f : exp2Hw(m[half] - m_all);
  }
  bool poisoned = bad_length || bad_page;
  poisoned = __syncthreads_or(poisoned);
  for (int w = 0; w < T::kWarps; ++w) {
    if (w == warp)
#pragma unroll
      for (int j = 0; j < T::kVTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = g + 8 * (e / 2), col = (2 * t + (e & 1)) * (D / 8) + j;
          shared_o[r * T::kOStride + col] += weight[e / 2] * o[j][e];
        }
    __syncthreads();
  }

  // The tile's rows out: O / l and LSE, or the split's partial state
  constexpr int kLanesPerRow = D / 8;
  for (int unit = threadIdx.x; unit < T::kRows * kLanesPerRow; unit += T::kThreads) {
    const int r = unit / kLanesPerRow, part = unit % kLanesPerRow;
    const int row = row_block * T::kRows + r;
    if (row >= rows_total)
      continue;
    float m_all = neg_inf, l_all = 0.0f;
    for (int w = 0; w < T::kWarps; ++w)
      m_all = fmaxf(m_all, shared_m[w * T::kRows + r]);
    for (int w = 0; w < T::kWarps; ++w) {
      const float mw = shared_m[w * T::kRows + r], lw = shared_l[w * T::kRows + r];
      // (a warp whose visible keys all had NaN scores kept m = -inf and l = NaN: the NaN carries on)
      l_all += mw == neg_inf ? (lw == lw ? 0.0f : lw) : lw * exp2Hw(mw - m_all);
    }
    const bool empty = l_all == 0.0f && !poisoned;
    const float inverse = poisoned ? bitsAsFloat(0x7FC00000u) : (empty ? 0.0f : 1.0f / l_all);
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      v[e] = shared_o[r * T::kOStride + part * 8 + e] * inverse;
    const float lse = poisoned ? bitsAsFloat(0x7FC00000u)
                               : (empty ? neg_inf : (m_all + log2f(l_all)) * 0.6931471805599453f);
    const int query = row / group, head = kv_head * group + row % group;
    const int64_t state_row = (static_cast<int64_t>(b) * p.q_heads + head) * p.queries + query;
    if (p.splits == 1) {
      const uint64_t dst = p.o + (b * p.o_batch_stride + head * p.o_head_stride + query * p.o_row_stride + part * 8) * 2;
      *reinterpret_cast<uint4 *>(dst) =
          make_uint4(packBf16x2(v[0], v[1]), packBf16x2(v[2], v[3]), packBf16x2(v[4], v[5]), packBf16x2(v[6], v[7]));
      if (p.lse != 0 && part == 0)
        reinterpret_cast<float *>(p.lse)[state_row] = lse;
    } else {
      const int64_t rows_all = static_cast<int64_t>(p.batch) * p.q_heads * p.queries;
      float *dst = reinterpret_cast<float *>(p.partial_o) + (split * rows_all + state_row) * D + part * 8;
      *reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
      *reinterpret_cast<float4 *>(dst + 4) = make_float4(v[4], v[5], v[6], v[7]);
      if (part == 0)
        reinterpret_cast<float *>(p.partial_lse)[split * rows_all + state_row] = lse;
    }
  }
}

// The splits' partial states merged into O (BF16) and LSE by merge::mergeRowScales (the rule of
// merge-states). grid ceil(rows / (kThreads / (D / 8))), block kThreads; splits <= 16.
template <class C> FA4JIT_DEVICE void combineSplits(const DecodeParams &p) {
  using T = DecodeTraits<C>;
  constexpr int D = T::kHeadDim, kLanesPerRow = D / 8;
  const int part = static_cast<int>(threadIdx.x) % kLanesPerRow;
  const int64_t rows_all = static_cast<int64_t>(p.batch) * p.q_heads * p.queries;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (T::kThreads / kLanesPerRow) + threadIdx.x / kLanesPerRow;
  if (row >= rows_all)
    return;
  float lse[merge::kMaxMergeParts], scale[merge::kMaxMergeParts];
#pragma unroll
  for (int i = 0; i < merge::kMaxMergeParts; ++i)
    lse[i] = i < p.splits ? reinterpret_cast<const float *>(p.partial_lse)[i * rows_all + row] : 0.0f;
  const float merged_lse = merge::mergeRowScales(lse, p.splits, scale);
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < merge::kMaxMergeParts; ++i)
    if (scale[i] != 0.0f) {
      const float *src = reinterpret_cast<const float *>(p.partial_o) + (i * rows_all + row) * D + part * 8;
      const float4 a = *reinterpret_cast<const float4 *>(src), c = *reinterpret_cast<const float4 *>(src + 4);
      const float v[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
#pragma unroll
      for (int e = 0; e < 8; ++e)
        acc[e] = fmaf(scale[i], v[e], acc[e]);
    }
  const int64_t query = row % p.queries, head_row = row / p.queries;
  const int64_t head = head_row % p.q_heads, b = head_row / p.q_heads;
  const uint64_t dst = p.o + (b * p.o_batch_stride + head * p.o_head_stride + query * p.o_row_stride + part * 8) * 2;
  *reinterpret_cast<uint4 *>(dst) =
      make_uint4(packBf16x2(acc[0], acc[1]), packBf16x2(acc[2], acc[3]), packBf16x2(acc[4], acc[5]), packBf16x2(acc[6], acc[7]));
  if (p.lse != 0 && part == 0)
    reinterpret_cast<float *>(p.lse)[row] = merged_lse;
}

} // namespace fa4jit::device::paged
#endif
