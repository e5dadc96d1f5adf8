// Direct-P's thread key blocks (templates/fa4jit/attention/key_order.cuh), on the host: the S
// columns, K's tile rows and V^T's columns agree on which key each holds, every map is a
// bijection of the tile's keys, V^T's words are runs of 4 consecutive keys (the widening copies
// words), and each block spans the threads ThreadBlocks says it does.
#include <catch2/catch.hpp>

#include "fa4jit/attention/key_order.cuh"

#include <map>
#include <set>
#include <type_traits>

namespace da = fa4jit::device::attention;

namespace {

template <int kBlockN> void checkMaps() {
  INFO("block_n " << kBlockN);
  std::set<int> s_keys, vt_keys;
  for (int c = 0; c < kBlockN; ++c) {
    const int key = da::threadBlockKey<kBlockN>(c);
    REQUIRE(key >= 0);
    REQUIRE(key < kBlockN);
    CHECK(key / 128 == c / 128); // within the column's 128-key group
    s_keys.insert(key);
    CHECK(da::threadBlockColumn<kBlockN>(key) == c); // K's row of that key is the column
    // PV's position p takes S column registerPColumn(p): V^T must hold that column's key there
    CHECK(da::threadBlockVtKey<kBlockN>(c) == da::threadBlockKey<kBlockN>(da::registerPColumn(c)));
    vt_keys.insert(da::threadBlockVtKey<kBlockN>(c));
    if (c % 4 == 0) // a word of 4 consecutive keys, from a multiple of 4
      CHECK(da::threadBlockVtKey<kBlockN>(c) % 4 == 0);
    else
      CHECK(da::threadBlockVtKey<kBlockN>(c) == da::threadBlockVtKey<kBlockN>(c - 1) + 1);
  }
  CHECK(s_keys.size() == std::size_t(kBlockN));
  CHECK(vt_keys.size() == std::size_t(kBlockN));
  // Each k-step of a thread's row (8 columns: n8 tiles 4 kb .. 4 kb + 3) lies in one block, the
  // block ThreadBlocks names, shared by exactly lanesOf(block) threads of the quad.
  using B = da::ThreadBlocks<kBlockN, true>;
  for (int kb = 0; kb < kBlockN / 32; ++kb) {
    std::map<int, std::set<int>> lanes_of_key_block; // the key's block -> threads holding it
    for (int q = 0; q < 4; ++q) {
      std::set<int> blocks;
      for (int nt = 4 * kb; nt < 4 * kb + 4; ++nt)
        for (int e = 0; e < 2; ++e)
          blocks.insert(da::threadBlockKeyOf<kBlockN>(nt, q, e) / 32);
      REQUIRE(blocks.size() == 1u);
      lanes_of_key_block[*blocks.begin()].insert(q);
    }
    for (const auto &kv : lanes_of_key_block)
      CHECK(int(kv.second.size()) == B::lanesOf(B::blockOfStep(kb)));
  }
  // Steps of one of the thread's blocks hold keys of one key block (the thread's view is whole).
  for (int q = 0; q < 4; ++q)
    for (int kb = 1; kb < kBlockN / 32; ++kb)
      if (!B::startsBlock(kb))
        CHECK(da::threadBlockKeyOf<kBlockN>(4 * kb, q, 0) / 32 == da::threadBlockKeyOf<kBlockN>(4 * kb - 4, q, 0) / 32);
}

} // namespace

TEST_CASE("thread key blocks: S columns, K rows and V^T columns name the same keys", "[key_order]") {
  checkMaps<96>();
  checkMaps<128>();
  checkMaps<256>();
  // The register-P order itself, per 16 keys: positions 4 q + i <- columns 2q, 2q+1, 8+2q, 9+2q.
  const int expected[16] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
  for (int p = 0; p < 16; ++p) {
    CHECK(da::registerPColumn(p) == expected[p]);
    CHECK(da::registerPColumn(p + 48) == expected[p] + 48);
  }
}

TEST_CASE("thread key blocks: vtWordPosition inverts V^T's key order word by word", "[key_order]") {
  // (the widening of the producer's spare warps stores each 4-key word of a block where it goes)
  auto check = [](auto block_n) {
    constexpr int kBlockN = decltype(block_n)::value;
    INFO("block_n " << kBlockN);
    std::set<int> positions;
    for (int b = 0; b < kBlockN / 32; ++b)
      for (int m = 0; m < 8; ++m) {
        const int p = da::vtWordPosition<kBlockN>(b, m);
        REQUIRE(p >= 0);
        REQUIRE(p < kBlockN);
        CHECK(p % 4 == 0);
        CHECK(da::threadBlockVtKey<kBlockN>(p) == 32 * b + 4 * m);
        positions.insert(p);
      }
    CHECK(positions.size() == std::size_t(kBlockN / 4));
  };
  check(std::integral_constant<int, 96>{});
  check(std::integral_constant<int, 128>{});
  check(std::integral_constant<int, 256>{});
}

TEST_CASE("thread key blocks: a 128-key group gives each thread one block per row", "[key_order]") {
  for (int q = 0; q < 4; ++q) { // the thread's lane % 4
    std::set<int> keys;
    for (int nt = 0; nt < 16; ++nt)
      for (int e = 0; e < 2; ++e)
        keys.insert(da::threadBlockKeyOf<128>(nt, q, e));
    REQUIRE(keys.size() == 32u);
    CHECK(*keys.begin() == 32 * q); // consecutive keys 32 q .. 32 q + 31: block q of the group
    CHECK(*keys.rbegin() == 32 * q + 31);
  }
  // The widened V^T's 16-byte vector j holds word j (keys 4 j .. 4 j + 3) of blocks 0..3.
  for (int j = 0; j < 8; ++j)
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 4; ++i)
        CHECK(da::threadBlockVtKey<128>(16 * j + 4 * q + i) == 32 * q + 4 * j + i);
  using B = da::ThreadBlocks<128, true>;
  CHECK(B::kBlocks == 1);
  CHECK(B::fewestLanes() == 1);
}

TEST_CASE("thread key blocks: a 96-key tile puts blocks 0 and 2 in thread pairs, block 1 in the quad",
          "[key_order]") {
  for (int q = 0; q < 4; ++q) {
    std::set<int> first, last; // n8 tiles 0..7 and 8..11 of the thread's row
    for (int nt = 0; nt < 12; ++nt)
      for (int e = 0; e < 2; ++e)
        (nt < 8 ? first : last).insert(da::threadBlockKeyOf<96>(nt, q, e));
    REQUIRE(first.size() == 16u);
    CHECK(*first.begin() == (q < 2 ? 0 : 64) + 16 * (q % 2)); // half of block 0 (threads 0, 1) or 2
    CHECK(*first.rbegin() == *first.begin() + 15);
    REQUIRE(last.size() == 8u);
    CHECK(*last.begin() == 32 + 8 * q); // a quarter of block 1
    CHECK(*last.rbegin() == 39 + 8 * q);
  }
  using B = da::ThreadBlocks<96, true>;
  CHECK(B::kBlocks == 2);
  CHECK(B::blockOfStep(0) == 0);
  CHECK(B::blockOfStep(1) == 0);
  CHECK(B::blockOfStep(2) == 1);
  CHECK(B::fewestLanes() == 2);
  // Quad blocks: one per k-step, four threads each.
  using Q = da::ThreadBlocks<96, false>;
  CHECK(Q::kBlocks == 3);
  CHECK(Q::lanesOf(2) == 4);
}
