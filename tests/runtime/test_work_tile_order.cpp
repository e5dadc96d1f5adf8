// The wgmma attention grid's work-tile order (templates/fa4jit/attention_sm90/work_tile_order.cuh),
// on the host: every m-block of every (batch, query head) runs exactly once, and with kv_multicast
// the two CTAs of a cluster share one head and one key-tile count.
#include <catch2/catch.hpp>

#include "fa4jit/attention_sm90/work_tile_order.cuh"

#include <map>
#include <tuple>

namespace {

namespace da = fa4jit::device::attention;
namespace ds = fa4jit::device::attention_sm90;

da::AttentionParams shape(int batch, int heads_q, int seqlen_q) {
  da::AttentionParams p{};
  p.batch = batch, p.heads_q = heads_q, p.heads_kv = 1, p.seqlen_q = seqlen_q, p.seqlen_k = seqlen_q;
  return p;
}

using Key = std::tuple<int, int, int>; // batch, query head, m-block

template <bool kCausal> void checkPlain(const da::AttentionParams &p, int rows) {
  std::map<Key, int> seen;
  const int blocks = ds::qBlocks(p, rows);
  for (int t = 0; t < ds::workTileCount(p, rows); ++t) {
    const ds::WorkTile w = ds::workTileOf<kCausal>(t, p, rows);
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

} // namespace

TEST_CASE("work tiles: every m-block once, pairs of m-blocks per cluster", "[work_tiles]") {
  for (const int rows : {128, 192})
    for (const int seqlen_q : {1, 77, 128, 129, 256, 300, 640, 1000, 4096})
      for (const auto &[batch, heads] : {std::pair{1, 1}, std::pair{2, 3}, std::pair{3, 2}}) {
        INFO("rows " << rows << " seqlen_q " << seqlen_q << " batch " << batch << " heads " << heads);
        const da::AttentionParams p = shape(batch, heads, seqlen_q);
        checkPlain<false>(p, rows);
        checkPlain<true>(p, rows);
        checkPairs<false>(p, rows);
        checkPairs<true>(p, rows);
      }
}
