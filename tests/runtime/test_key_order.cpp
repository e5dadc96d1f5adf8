// Direct-P's thread key blocks (templates/fa4jit/attention/key_order.cuh), on the host: the S
// columns, K's tile rows and V^T's columns agree on which key each holds, every map is a
// bijection of the tile's keys, and each thread's 32 columns of a row are one whole 32-key block.
#include <catch2/catch.hpp>

#include "fa4jit/attention/key_order.cuh"

#include <set>

namespace da = fa4jit::device::attention;

TEST_CASE("thread key blocks: S columns, K rows and V^T columns name the same keys", "[key_order]") {
  for (const int keys : {128, 256}) {
    std::set<int> s_keys, vt_keys;
    for (int c = 0; c < keys; ++c) {
      const int key = da::threadBlockKey(c);
      REQUIRE(key >= 0);
      REQUIRE(key < keys);
      CHECK(key / 128 == c / 128); // within the column's 128-key group
      s_keys.insert(key);
      CHECK(da::threadBlockColumn(key) == c); // K's row of that key is the column
      // PV's position p takes S column registerPColumn(p): V^T must hold that column's key there
      CHECK(da::threadBlockVtKey(c) == da::threadBlockKey(da::registerPColumn(c)));
      vt_keys.insert(da::threadBlockVtKey(c));
    }
    CHECK(s_keys.size() == std::size_t(keys));
    CHECK(vt_keys.size() == std::size_t(keys));
  }
  // The register-P order itself, per 16 keys: positions 4 q + i <- columns 2q, 2q+1, 8+2q, 9+2q.
  const int expected[16] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
  for (int p = 0; p < 16; ++p) {
    CHECK(da::registerPColumn(p) == expected[p]);
    CHECK(da::registerPColumn(p + 48) == expected[p] + 48);
  }
}

TEST_CASE("thread key blocks: a thread's columns of a row are one 32-key block per 128 keys", "[key_order]") {
  for (int q = 0; q < 4; ++q) { // the thread's lane % 4
    std::set<int> keys;
    for (int nt = 0; nt < 16; ++nt)
      for (int e = 0; e < 2; ++e)
        keys.insert(da::threadBlockKey(8 * nt + 2 * q + e));
    REQUIRE(keys.size() == 32u);
    CHECK(*keys.begin() == 32 * q); // consecutive keys 32 q .. 32 q + 31: block q of the group
    CHECK(*keys.rbegin() == 32 * q + 31);
  }
  // The widened V^T's 16-byte vector j holds word j (keys 4 j .. 4 j + 3) of blocks 0..3.
  for (int j = 0; j < 8; ++j)
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 4; ++i)
        CHECK(da::threadBlockVtKey(16 * j + 4 * q + i) == 32 * q + 4 * j + i);
}
