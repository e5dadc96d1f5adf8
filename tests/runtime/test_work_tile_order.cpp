// The wgmma attention grid's work-tile order (templates/fa4jit/attention_sm90/work_tile_order.cuh),
// on the host: every m-block of every (batch, query head) runs exactly once, and with kv_multicast
// the two CTAs of a cluster share one head and one key-tile count.
#include <catch2/catch.hpp>

#include "fa4jit/attention_sm90/work_tile_order.cuh"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <vector>

namespace {

namespace da = fa4jit::device::attention;
namespace ds = fa4jit::device::attention_sm90;

da::AttentionParams shape(int batch, int heads_q, int seqlen_q) {
  da::AttentionParams p{};
  p.batch = batch, p.heads_q = heads_q, p.heads_kv = 1, p.seqlen_q = seqlen_q, p.seqlen_k = seqlen_q;
  return p;
}

using Key = std::tuple<int, int, int>; // batch, query head, m-block

template <bool kCausal> void checkPlain(const da::AttentionParams &p, int rows, int stride = 0) {
  std::map<Key, int> seen;
  const int blocks = ds::qBlocks(p, rows);
  for (int t = 0; t < ds::workTileCount(p, rows); ++t) {
    const ds::WorkTile w = ds::workTileOf<kCausal>(t, p, rows, stride);
    REQUIRE(w.m_block >= 0);
    REQUIRE(w.m_block < blocks);
    CHECK(w.key_m_block == w.m_block);
    if (kCausal && t % blocks == 0) // each head's first work tile is its longest
      CHECK(w.m_block == blocks - 1);
    ++seen[{w.b, w.hq, w.m_block}];
  }
  CHECK(seen.size() == static_cast<std::size_t>(blocks * p.heads_q * p.batch));
  for (const auto &[key, count] : seen)
    CHECK(count == 1);
}

template <bool kCausal> void checkPairs(const da::AttentionParams &p, int rows) {
  std::map<Key, int> seen;
  const int blocks = ds::qBlocks(p, rows);
  int empty = 0;
  for (int u = 0; u < ds::pairUnitCount(p, rows); ++u) {
    const ds::WorkTile a = ds::pairWorkTileOf<kCausal>(u, 0, p, rows);
    const ds::WorkTile b = ds::pairWorkTileOf<kCausal>(u, 1, p, rows);
    // One head and one ring for both CTAs, as many key tiles as the later block needs.
    CHECK(a.b == b.b);
    CHECK(a.hq == b.hq);
    CHECK(a.key_m_block == b.key_m_block);
    CHECK(b.m_block == a.m_block + 1);
    CHECK(a.m_block % 2 == 0);
    CHECK(a.key_m_block == (b.m_block < blocks ? b.m_block : a.m_block));
    REQUIRE(a.m_block < blocks);
    ++seen[{a.b, a.hq, a.m_block}];
    if (b.m_block < blocks) {
      ++seen[{b.b, b.hq, b.m_block}];
    } else { // the odd last block's partner: no rows
      CHECK(b.m_block == blocks);
      CHECK(blocks % 2 == 1);
      CHECK(b.m0() >= p.seqlen_q);
      ++empty;
    }
  }
  CHECK(seen.size() == static_cast<std::size_t>(blocks * p.heads_q * p.batch));
  for (const auto &[key, count] : seen)
    CHECK(count == 1);
  CHECK(empty == (blocks % 2) * p.heads_q * p.batch);
  if (kCausal) // each head's first unit holds its longest pair
    CHECK(ds::pairWorkTileOf<kCausal>(0, 1, p, rows).key_m_block == blocks - 1);
}

// The grid of one CTA per work tile: every m-block once; with causal masking, groups of heads,
// each group's m-blocks never growing. Returns the tiles' lengths (key m-blocks + 1) in order.
template <bool kCausal> std::vector<int> checkGrid(const da::AttentionParams &p, int rows, int bytes_per_key) {
  std::map<Key, int> seen;
  std::vector<int> lengths;
  const int blocks = ds::qBlocks(p, rows), most = ds::causalGroupHeads(p, bytes_per_key);
  REQUIRE(most >= 1);
  REQUIRE(most <= p.heads_q * p.batch);
  const ds::CausalGroups groups = ds::CausalGroups::of(p.heads_q * p.batch, most);
  int previous_m = blocks, previous_head = -1, group_first = 0, group_end = 0, group_count = 0;
  for (int t = 0; t < ds::workTileCount(p, rows); ++t) {
    const ds::WorkTile w = ds::gridWorkTileOf<kCausal>(t, p, rows, bytes_per_key);
    REQUIRE(w.m_block >= 0);
    REQUIRE(w.m_block < blocks);
    REQUIRE(w.hq < p.heads_q);
    REQUIRE(w.b < p.batch);
    CHECK(w.key_m_block == w.m_block);
    const int head = w.b * p.heads_q + w.hq;
    if (kCausal) {
      if (head >= group_end) { // a new group, the next heads, starts with its longest tiles
        CHECK(head == group_end);
        CHECK(w.m_block == blocks - 1);
        group_first = group_end;
        group_end = group_first + groups.base + (group_count < groups.extra ? 1 : 0);
        ++group_count;
        CHECK(group_end - group_first <= most);
      } else {
        CHECK(head >= group_first);
        CHECK(w.m_block <= previous_m);
        CHECK((w.m_block < previous_m || head == previous_head + 1)); // the group's heads fastest
      }
      previous_m = w.m_block, previous_head = head;
    } else if (!ds::cheapLastBlock(p, rows)) {
      CHECK(w.m_block == t % blocks); // the block's own m-block and head
      CHECK(head == t / blocks);
    } else { // every head's full blocks in order, then the cheap last blocks
      const int full = (blocks - 1) * p.heads_q * p.batch;
      CHECK(w.m_block == (t < full ? t % (blocks - 1) : blocks - 1));
      CHECK(head == (t < full ? t / (blocks - 1) : t - full));
    }
    ++seen[{w.b, w.hq, w.m_block}];
    lengths.push_back(w.key_m_block + 1);
  }
  CHECK(seen.size() == static_cast<std::size_t>(blocks * p.heads_q * p.batch));
  for (const auto &[key, count] : seen)
    CHECK(count == 1);
  if (kCausal) {
    CHECK(group_count == groups.count);
    CHECK(group_end == p.heads_q * p.batch);
  }
  return lengths;
}

// The makespan of a greedy hand-out of tiles (in order, each to the first SM free) over the ideal.
double greedyMakespan(const std::vector<int> &lengths, int sms) {
  std::priority_queue<long long, std::vector<long long>, std::greater<>> free_at;
  for (int i = 0; i < sms; ++i)
    free_at.push(0);
  long long total = 0, end = 0;
  for (const int l : lengths) {
    const long long start = free_at.top();
    free_at.pop();
    free_at.push(start + l);
    end = std::max(end, start + l);
    total += l;
  }
  return static_cast<double>(end) * sms / static_cast<double>(total);
}

} // namespace

TEST_CASE("work tiles: the causal grid hands out balanced work, its groups' K/V fit L2", "[work_tiles]") {
  // The benchmark shapes (batch x heads x seqlen = 524288, 192-row m-blocks, 256 bytes per key:
  // D128 FP8 K and V images) on the H200's 132 SMs.
  // Modelled: 1.003-1.008 for 256 bytes per key, up to 1.032 for 512 and 1.038 for 1024 (one
  // head per group: each head's m-blocks longest first).
  for (const int seqlen : {4096, 8192, 16384, 32768})
    for (const int bytes_per_key : {256, 512, 1024}) {
    INFO("seqlen " << seqlen << " bytes per key " << bytes_per_key);
    da::AttentionParams p = shape(1, 524288 / seqlen, seqlen);
    const std::vector<int> lengths = checkGrid<true>(p, 192, bytes_per_key);
    CHECK(greedyMakespan(lengths, 132) < (bytes_per_key == 256 ? 1.01 : 1.04));
    const int most = ds::causalGroupHeads(p, bytes_per_key);
    if (most > 1)
      CHECK(static_cast<long long>(most) * seqlen * bytes_per_key <= 24ll << 20);
    // The order before (the block's own m-block: each head's shortest first) ends with the last
    // heads' longest tiles: 1.06 of the ideal.
    std::vector<int> block_order;
    for (int t = 0; t < ds::workTileCount(p, 192); ++t)
      block_order.push_back(t % ds::qBlocks(p, 192) + 1);
    CHECK(greedyMakespan(block_order, 132) > 1.05);
  }
  // Rows too long for any group: one head per group.
  CHECK(ds::causalGroupHeads(shape(2, 8, 1 << 20), 1024) == 1);
  CHECK(ds::causalGroupHeads(shape(2, 3, 128), 256) == 6); // every head fits
}

TEST_CASE("work tiles: every m-block once, pairs of m-blocks per cluster", "[work_tiles]") {
  for (const int rows : {128, 192})
    for (const int seqlen_q : {1, 77, 128, 129, 256, 300, 640, 1000, 4096})
      for (const auto &[batch, heads] : {std::pair{1, 1}, std::pair{2, 3}, std::pair{3, 2}}) {
        INFO("rows " << rows << " seqlen_q " << seqlen_q << " batch " << batch << " heads " << heads);
        const da::AttentionParams p = shape(batch, heads, seqlen_q);
        for (const int stride : {0, 1, 7, 132, 1000}) // (0: one CTA per work tile)
          checkPlain<false>(p, rows, stride);
        checkPlain<true>(p, rows);
        checkPairs<false>(p, rows);
        checkPairs<true>(p, rows);
        for (const int bytes_per_key : {256, 512, 1024 << 10}) { // (the last: one head per group)
          checkGrid<false>(p, rows, bytes_per_key);
          checkGrid<true>(p, rows, bytes_per_key);
        }
      }
}

// The static stride of the persistent grid (CTA i: tiles i, i + stride, ...) over the non-causal
// order, each tile costing 1, or `cheap` where one of its consumers has no rows: the makespan.
// head_major: the order before cheap blocks were placed (each head's m-blocks in order).
double strideMakespan(const da::AttentionParams &p, int rows, int ctas, double cheap, bool head_major) {
  std::vector<double> load(ctas, 0.0);
  const int blocks = ds::qBlocks(p, rows);
  for (int t = 0; t < ds::workTileCount(p, rows); ++t) {
    const int m_block = head_major ? t % blocks : ds::workTileOf<false>(t, p, rows, ctas).m_block;
    load[t % ctas] += m_block == blocks - 1 && ds::cheapLastBlock(p, rows) ? cheap : 1.0;
  }
  return *std::max_element(load.begin(), load.end());
}

TEST_CASE("work tiles: cheap ragged last m-blocks are spread over the CTAs", "[work_tiles]") {
  // 4096 rows in 192-row blocks: 21 full blocks and one of 64 rows (two of its three consumers
  // empty), 128 heads, 2816 tiles over 132 CTAs: 44 of them run 22 tiles.
  const da::AttentionParams p = shape(1, 128, 4096);
  REQUIRE(ds::cheapLastBlock(p, 192));
  REQUIRE(ds::workTileCount(p, 192) == 2816);
  // Persistent (stride 132): every head's blocks in the same tiles as head-major (the same heads
  // run at once), rotated by the step; each CTA with 22 tiles meets a cheap one.
  for (int t = 0; t < 2816; ++t) {
    const ds::WorkTile w = ds::workTileOf<false>(t, p, 192, 132);
    REQUIRE(w.hq == t / 22);
    REQUIRE(w.m_block == (t % 22 + t / 132) % 22);
  }
  for (int cta = 0; cta < 44; ++cta) {
    INFO("CTA " << cta);
    int cheap = 0;
    for (int t = cta; t < 2816; t += 132)
      cheap += ds::workTileOf<false>(t, p, 192, 132).m_block == 21;
    CHECK(cheap == 1);
  }
  // At ~0.45 of a full tile: 22 -> 21.45 tiles' time (head-major: 22, every cheap tile in CTAs
  // 21, 43, ..., 131, the others 22 or 21 full ones).
  CHECK(strideMakespan(p, 192, 132, 0.45, false) < 21.5);
  CHECK(strideMakespan(p, 192, 132, 0.45, true) == 22.0);
  // Shorter rows, more heads: 1000 rows (5 blocks of 192 and one of 40), 524 heads.
  const da::AttentionParams q = shape(4, 131, 1000);
  CHECK(strideMakespan(q, 192, 132, 0.45, false) < 22.0);
  CHECK(strideMakespan(q, 192, 132, 0.45, true) == 24.0);
  // One CTA per work tile (stride 0): the cheap tiles last, where the hardware's hand-out ends.
  for (int t = 0; t < 2816; ++t)
    REQUIRE((ds::workTileOf<false>(t, p, 192).m_block == 21) == (t >= 2688));
  // Blocks whose last one has rows for every consumer keep the head-major order.
  CHECK_FALSE(ds::cheapLastBlock(shape(1, 8, 1000), 128)); // 1000 = 7 * 128 + 104
  CHECK(ds::cheapLastBlock(shape(1, 8, 1000), 192));       // 1000 = 5 * 192 + 40
  CHECK_FALSE(ds::cheapLastBlock(shape(1, 8, 4096), 128)); // no ragged block
  CHECK_FALSE(ds::cheapLastBlock(shape(1, 8, 100), 192));  // one block only
}
