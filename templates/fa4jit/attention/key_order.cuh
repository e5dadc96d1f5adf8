#pragma once
// The key order of Direct-P's thread key blocks (TileSpec::thread_key_blocks): which key each S
// column of a tile holds, chosen so that a 32-key block (NUMERICS.md §2.3: 32 consecutive keys,
// unchanged) spans as few threads of a quad as the tile allows. Host-compilable: a CPU test
// checks that the maps below agree. S column c = 8 nt + 2 q + e (thread q of a quad, n8 tile nt,
// element e: mma.cuh's layout).
//   128-key groups (block_n 128): column 8 nt + 2 q + e holds key 32 q + 2 (nt % 16) + e: thread
//     q's 32 columns of a row are block q, whole (one thread per block).
//   96-key tiles (block_n 96, three blocks over four threads): n8 tiles 0..7 hold blocks 0 and 2,
//     16 keys of each in each thread of a pair (threads 0, 1: block 0; threads 2, 3: block 2);
//     tiles 8..11 hold block 1, 8 keys in each thread of the quad. A thread's row then meets two
//     blocks instead of three, their maxima take 1 and 2 shuffles instead of 2 each.
// K's tile row threadBlockColumn(k) holds key k (the widening writes K in that row order). PV's k
// position p takes P from S column registerPColumn(p) (the register-P order: P goes from the S
// accumulator into the FP8 A fragment without shuffles, attention/tile_load.cuh's
// permuteKeys16), so V^T's column p holds key threadBlockVtKey(p); every 4 positions 4 m .. 4 m + 3
// hold 4 consecutive keys (a word of a widened block), which the widening copies word by word
// (attention_sm90/producer.cuh's produceMxfp4Vt).
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention {

// Whether a tile of kBlockN keys has a thread-key-block order.
FA4JIT_HD constexpr bool threadKeyBlocksTile(int block_n) { return block_n == 96 || block_n % 128 == 0; }

// The key of S column 8 nt + 2 q + e, by the column's parts (the kernels' form: nt is a
// compile-time constant there, q the lane's).
template <int kBlockN> FA4JIT_HD constexpr int threadBlockKeyOf(int nt, int q, int e) {
  if constexpr (kBlockN == 96)
    return nt < 8 ? 32 * (q / 2 * 2) + 16 * (q % 2) + 2 * nt + e : 32 + 8 * q + 2 * (nt - 8) + e;
  else
    return (nt / 16) * 128 + 32 * q + 2 * (nt % 16) + e;
}

template <int kBlockN> FA4JIT_HD constexpr int threadBlockKey(int column) {
  return threadBlockKeyOf<kBlockN>(column / 8, column % 8 / 2, column % 2);
}

// The S column (and K tile row) of key `key`: threadBlockKey inverted.
template <int kBlockN> FA4JIT_HD constexpr int threadBlockColumn(int key) {
  if constexpr (kBlockN == 96) {
    const int b = key / 32, x = key % 32;
    if (b == 1)
      return 8 * (8 + x % 8 / 2) + 2 * (x / 8) + x % 2;
    return 8 * (x % 16 / 2) + 2 * (b + x / 16) + x % 2; // (b is 0 or 2: threads b, b + 1)
  } else {
    const int group = key / 128, q = key % 128 / 32, x = key % 32;
    return group * 128 + 8 * (x / 2) + 2 * q + x % 2;
  }
}

// The S column whose P the FP8 A fragment carries at PV's k position p (per 16 keys:
// positions 4 q + i <- columns 2 q, 2 q + 1, 8 + 2 q, 9 + 2 q).
FA4JIT_HD constexpr int registerPColumn(int p) {
  const int base = p - p % 16, q = p % 16 / 4, i = p % 4;
  return base + (i / 2) * 8 + 2 * q + i % 2;
}

template <int kBlockN> FA4JIT_HD constexpr int threadBlockVtKey(int p) {
  return threadBlockKey<kBlockN>(registerPColumn(p));
}

// The V^T position of word m (keys 4 m .. 4 m + 3) of the tile's 32-key block b: threadBlockVtKey
// inverted on the words (every position that is a multiple of 4 starts one; test_key_order.cpp
// checks the inversion). Closed forms, so that a run-time block index costs a few integer ops.
template <int kBlockN> FA4JIT_HD constexpr int vtWordPosition(int b, int m) {
  if constexpr (kBlockN == 96) // (block 1 in the quad, blocks 0 and 2 in thread pairs)
    return b == 1 ? 64 + 16 * (m % 2) + 4 * (m / 2) : 16 * (m % 4) + 4 * (m / 4) + 4 * b;
  else
    return (b / 4) * 128 + 16 * m + 4 * (b % 4);
}

// A thread's blocks (NUMERICS.md §2.3's, in the order of its k-steps of 32 S columns): the block
// that k-step kb of its row belongs to (an index into the thread's blocks, not the key's block),
// how many blocks a thread meets per row, and how many threads of the quad share a block (1, 2 or
// 4: its max takes 0, 1 or 2 shuffles). Quad blocks (no thread key blocks): one block per k-step,
// shared by the quad.
template <int kBlockN, bool kThreadBlocks> struct ThreadBlocks {
  static constexpr int kSteps = kBlockN / 32;
  static constexpr int kBlocks = !kThreadBlocks ? kSteps : kBlockN == 96 ? 2 : kBlockN / 128;
  FA4JIT_HD static constexpr int blockOfStep(int kb) {
    return !kThreadBlocks ? kb : kBlockN == 96 ? (kb < 2 ? 0 : 1) : kb / 4;
  }
  FA4JIT_HD static constexpr int lanesOf(int block) {
    return !kThreadBlocks ? 4 : kBlockN == 96 ? (block == 0 ? 2 : 4) : 1;
  }
  FA4JIT_HD static constexpr bool startsBlock(int kb) { return kb == 0 || blockOfStep(kb) != blockOfStep(kb - 1); }
  // The fewest threads any block of the row spans: the tile max's remaining quad reduction.
  FA4JIT_HD static constexpr int fewestLanes() { return !kThreadBlocks ? 4 : kBlockN == 96 ? 2 : 1; }
};

} // namespace fa4jit::device::attention
