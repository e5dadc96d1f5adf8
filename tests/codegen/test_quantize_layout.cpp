// The host side of the quantizer contract (templates/fa4jit/quantize/params.cuh): the stored V^T
// key order, output sizes against the host formats, and launch grids that cover every output.
#include "fa4jit/codegen/block_formats.h"
#include "fa4jit/quantize/params.cuh"

#include <catch2/catch.hpp>
#include <set>
#include <vector>

namespace dq = fa4jit::device::quantize;

TEST_CASE("permuted V^T key order is Hopper's register-P order", "[codegen][quantize]") {
  const int expected[16] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
  std::set<int> seen;
  for (int pos = 0; pos < 32; ++pos) {
    CHECK(dq::vtKeyAt(pos, false) == pos);
    CHECK(dq::vtKeyAt(pos, true) == (pos & 16) + expected[pos & 15]);
    seen.insert(dq::vtKeyAt(pos, true));
  }
  CHECK(seen.size() == 32); // a permutation of the 32-key block: block scales are unchanged
  // Thread q of a quad holds S keys {2q, 2q+1, 8+2q, 9+2q}; its FP8 A fragment wants k = 4q..4q+3.
  for (int q = 0; q < 4; ++q) {
    CHECK(dq::vtKeyAt(4 * q, true) == 2 * q);
    CHECK(dq::vtKeyAt(4 * q + 1, true) == 2 * q + 1);
    CHECK(dq::vtKeyAt(4 * q + 2, true) == 8 + 2 * q);
    CHECK(dq::vtKeyAt(4 * q + 3, true) == 9 + 2 * q);
  }
}

TEST_CASE("output sizes agree with the host formats", "[codegen][quantize]") {
  for (int d : {64, 128, 256})
    for (int s : {1, 127, 128, 129, 1000}) {
      const int skp = static_cast<int>(dq::quantizePaddedKeys(s));
      CHECK(skp % 128 == 0);
      CHECK(skp >= s);
      CHECK(skp - s < 128);
      CHECK(dq::quantizePayloadBytesPerHead(0, d, s) == int64_t(s) * d / 2);
      CHECK(dq::quantizeScaleBytesPerHead(0, d, s) == int64_t(fa4jit::formats::scaleFactorBytes(s, d / 16)));
      CHECK(dq::quantizePayloadBytesPerHead(1, d, s) == int64_t(d) * skp / 2);
      CHECK(dq::quantizeScaleBytesPerHead(1, d, s) == int64_t(fa4jit::formats::scaleFactorBytes(d, skp / 32)));
      CHECK(dq::quantizePayloadBytesPerHead(2, d, s) == int64_t(d) * skp);
      CHECK(dq::quantizeScaleBytesPerHead(2, d, s) == 0);
    }
}

TEST_CASE("encode grids cover every row, key tile and head", "[codegen][quantize]") {
  for (int threads : {64, 128, 256})
    for (int d : {64, 128, 256})
      for (int s : {1, 33, 128, 300}) {
        const dq::Grid3 n = dq::quantizeEncodeGrid(0, d, threads, 2, 3, s);
        // NVFP4: rows up to S padded to 128 (their scale bytes are zero padding).
        const int64_t cta_rows = int64_t(dq::nvfp4RowsPerCta(threads, d)) * dq::kNvfp4TilesPerCta;
        CHECK(int64_t(n.x) * cta_rows >= (s + 127) / 128 * 128);
        CHECK(int64_t(n.x - 1) * cta_rows < (s + 127) / 128 * 128);
        CHECK(n.y == 6);
        const dq::Grid3 v = dq::quantizeEncodeGrid(1, d, threads, 2, 3, s);
        const int64_t key_tiles = dq::quantizePaddedKeys(s) / dq::kVtKeyTile;
        CHECK(int64_t(v.x) * dq::kVtTilesPerCta >= key_tiles);
        CHECK(int64_t(v.x - 1) * dq::kVtTilesPerCta < key_tiles);
        CHECK(v.y * dq::vtDimsPerCta(threads) == d);
        CHECK(v.z == 6);
      }
  CHECK(dq::quantizeSyncWords(7) == 7 * dq::kSyncWordsPerHead); // (one-pass MXFP4: per head)
  CHECK(dq::quantizeDefaultAmaxChunks(1, 1, 1) == 1);
  CHECK(dq::quantizeDefaultAmaxChunks(1, 1, 1 << 20) == 4096);   // 256 rows each
  CHECK(dq::quantizeDefaultAmaxChunks(64, 64, 4096) == 16);      // (many heads: by rows)
  CHECK(dq::quantizeDefaultAmaxChunks(1, 2, 4096) == 128);       // few heads: fill the GPU, 32 rows each
  for (int s : {1, 31, 33, 1000, 4096, 100000})
    for (int bh : {1, 7, 256, 4096}) {
      const int c = dq::quantizeDefaultAmaxChunks(1, bh, s);
      const int rows = dq::amaxRowsPerChunk(s, c);
      CHECK(rows % dq::kRowsPerMaskWord == 0);
      CHECK(int64_t(rows) * c >= s);
    }
}

TEST_CASE("the pipelined quantizer's steps never wait on an item no CTA can reach", "[codegen][quantize]") {
  // Every CTA of the grid runs its steps in order: reduce its item of step k, then wait until every
  // group of the head of its item of step k - lag is reduced, then encode it. Played out with CTAs
  // that take turns until none can move: every item must end encoded.
  for (int groups : {1, 2, 5, 32, 128, 1000})
    for (int heads : {1, 3, 16})
      for (int grid : {1, 2, 7, 64, 396}) {
        const int lag = dq::quantizePipelinedLag(groups, grid);
        const long items = long(groups) * heads;
        std::vector<int> reduced_per_head(heads, 0);
        std::vector<long> step(grid, 0);
        std::vector<bool> reduced_this_step(grid, false);
        long encoded = 0;
        for (bool moved = true; moved;) {
          moved = false;
          for (int c = 0; c < grid; ++c) {
            const long i = c + step[c] * grid, j = i - long(lag) * grid;
            if (j >= items)
              continue; // (done)
            if (i < items && !reduced_this_step[c]) {
              ++reduced_per_head[i / groups];
              reduced_this_step[c] = moved = true;
            }
            if (j >= 0 && reduced_per_head[j / groups] < groups)
              continue; // (waits)
            encoded += j >= 0;
            ++step[c];
            reduced_this_step[c] = false;
            moved = true;
          }
        }
        INFO("groups " << groups << " heads " << heads << " grid " << grid << " lag " << lag);
        CHECK(encoded == items);
      }
  // The wait bound itself: a head's groups fit within lag steps of the grid.
  CHECK(dq::quantizePipelinedLag(32, 396) == 1);
  CHECK(dq::quantizePipelinedLag(1000, 396) == 3);
  // Row groups hold whole words of the non-finite row mask at the default 256 threads.
  for (int d : {64, 128, 256})
    CHECK(dq::quantizePipelinedFits(256, d));
}
