#pragma once
// The key order of Direct-P's thread key blocks (TileSpec::thread_key_blocks), host-compilable so
// that a CPU test checks the three maps agree. Within a 128-key group of a tile:
//   S column c = 8 nt + 2 q + e (thread q of a quad, n8 tile nt, element e: mma.cuh's layout)
//   holds key threadBlockKey(c) = 32 q + 2 (nt % 16) + e, so thread q's 32 columns of a row are
//   the 32 consecutive keys of block q (NUMERICS.md §2.3's block, unchanged);
//   K's tile row threadBlockColumn(k) holds key k (the widening writes K in that row order);
//   PV's k position p takes P from S column registerPColumn(p) (the register-P order: P goes from
//   the S accumulator into the FP8 A fragment without shuffles, attention/tile_load.cuh's
//   permuteKeys16), so V^T's column p must hold key threadBlockVtKey(p) = threadBlockKey(
//   registerPColumn(p)) = 32 q + 4 j + i for p = 16 j + 4 q + i: word j of each of the four
//   blocks' widened bytes, side by side (attention_sm90/producer.cuh's produceMxfp4Vt).
#include "fa4jit/common.cuh"

namespace fa4jit::device::attention {

// By the column's parts (the kernels' form: nt is a compile-time constant there, q the lane's).
FA4JIT_HD constexpr int threadBlockKeyOf(int nt, int q, int e) { return (nt / 16) * 128 + 32 * q + 2 * (nt % 16) + e; }

FA4JIT_HD constexpr int threadBlockKey(int column) {
  return threadBlockKeyOf(column / 8, column % 8 / 2, column % 2);
}

FA4JIT_HD constexpr int threadBlockColumn(int key) {
  const int group = key / 128, q = key % 128 / 32, x = key % 32;
  return group * 128 + 8 * (x / 2) + 2 * q + x % 2;
}

// The S column whose P the FP8 A fragment carries at PV's k position p (per 16 keys:
// positions 4 q + i <- columns 2 q, 2 q + 1, 8 + 2 q, 9 + 2 q).
FA4JIT_HD constexpr int registerPColumn(int p) {
  const int base = p - p % 16, q = p % 16 / 4, i = p % 4;
  return base + (i / 2) * 8 + 2 * q + i % 2;
}

FA4JIT_HD constexpr int threadBlockVtKey(int p) {
  const int group = p / 128, j = p % 128 / 16, q = p % 16 / 4, i = p % 4;
  return group * 128 + 32 * q + 4 * j + i;
}

} // namespace fa4jit::device::attention
