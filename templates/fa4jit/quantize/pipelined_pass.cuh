#pragma once
// The pipelined one-pass quantizer of NVFP4 and E4M3 rows (params.cuh, quantizePipelinedGroups):
//   <name>_pipelined  grid (CTAs that are all resident at once, 1, 1), block T::kThreads;
//                     amax_chunks = quantizePipelinedGroups(seqlen, threads, head_dim);
//                     sync = uint32 [quantizeSyncWords(batch * heads)], zero at launch, left zero.
// Each CTA takes the items (head, row group) blockIdx.x, + gridDim.x, ... in turn. Step k reduces
// its item of step k (amaxOfRows: the partial and the row bitmask, then one release of the head's
// counter) and encodes its item of step k - lag, once that head's counter shows every group
// reduced: the encode is the two passes' (nvfp4EncodeGroup, e4m3RowsEncodeGroup) with the same
// head maximum, so the bits are theirs. What a CTA reduces at one step it encodes `lag` steps
// later, while the grid has read about lag * gridDim.x groups of x since: the engine launches it
// where those bytes fit L2 (quantizePipelinedBytesInFlight), so the encode reads x from L2.
#include "fa4jit/quantize/e4m3_rows.cuh"
#include "fa4jit/quantize/nvfp4.cuh"

namespace fa4jit::device::quantize {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

// The head's counter of reduced groups, after this CTA's partial and mask words: the barrier
// orders every thread's stores before thread 0's release at GPU scope (cumulative), as a grid
// barrier does.
FA4JIT_DEVICE void publishReducedGroup(uint32_t *reduced) {
  __syncthreads();
  if (threadIdx.x == 0)
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(reduced) : "memory");
}

// Waits until `groups` groups of the head are reduced; then every thread of the CTA may read their
// partials and mask words (with L2 loads: headAmax, writeFirstNonFiniteRow).
FA4JIT_DEVICE void waitReducedGroups(const uint32_t *reduced, uint32_t groups) {
  if (threadIdx.x == 0) {
    uint32_t seen;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(reduced) : "memory");
    } while (seen < groups);
  }
  __syncthreads();
}

template <class C> FA4JIT_DEVICE void pipelinedPass(const QuantizeParams &p) {
  using T = QuantizeTraits<C>;
  static_assert(T::kRowMajor, "the pipelined pass encodes NVFP4 and E4M3 rows");
  static_assert(quantizePipelinedFits(T::kThreads, T::kHeadDim), "a row group holds whole mask words");
  constexpr int kGroupRows = rowGroupRows(T::kThreads, T::kHeadDim);
  const int groups = p.amax_chunks;
  const int64_t items = static_cast<int64_t>(p.batch) * p.heads * groups;
  const int64_t grid = gridDim.x;
  const int64_t lag = quantizePipelinedLag(groups, static_cast<int>(grid));
  uint32_t *sync = reinterpret_cast<uint32_t *>(p.sync);
  // x stays in L2 from its first read to its second, and goes first after it.
  const L2PolicyReads first_read = l2EvictLastReads(), second_read = l2EvictFirstReads();
  for (int64_t i = blockIdx.x;; i += grid) {
    const int64_t j = i - lag * grid; // the item this step encodes
    if (j >= items)
      break;
    if (i < items) {
      const int bh = static_cast<int>(i / groups), g = static_cast<int>(i % groups);
      const int r0 = g * kGroupRows < p.seqlen ? g * kGroupRows : p.seqlen;
      const int r1 = r0 + kGroupRows < p.seqlen ? r0 + kGroupRows : p.seqlen;
      amaxOfRows<T, 2>(p, bh, r0, r1, g, first_read); // (FP32: two loads in flight, beside the encode's)
      publishReducedGroup(sync + static_cast<int64_t>(bh) * kSyncWordsPerHead);
    }
    if (j >= 0) {
      const int bh = static_cast<int>(j / groups), g = static_cast<int>(j % groups);
      uint32_t *words = sync + static_cast<int64_t>(bh) * kSyncWordsPerHead;
      const auto headOf = [&] {
        waitReducedGroups(words, static_cast<uint32_t>(groups));
        return headAmax<T>(p, bh);
      };
      if constexpr (T::kFormat == Format::Nvfp4)
        nvfp4EncodeGroup<C>(p, bh, g, headOf, second_read);
      else
        e4m3RowsEncodeGroup<C>(p, bh, g, headOf, second_read);
      // Every group of the head has been waited for once the last one is counted here: its
      // encoder leaves the head's words zero for the next launch.
      if (threadIdx.x == 0 && atomicAdd(words + 1, 1u) == static_cast<uint32_t>(groups) - 1u) {
        words[0] = 0u;
        words[1] = 0u;
      }
    }
  }
}

#endif // CUDA compilers

} // namespace fa4jit::device::quantize
