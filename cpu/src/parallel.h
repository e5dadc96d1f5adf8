#pragma once
// Runs fn(i) for i in [0, count) on up to `threads` std::threads (0: hardware concurrency).
// Work items are independent and write disjoint outputs, so results do not depend on the
// thread count.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace fa4jit::cpu {

template <typename Fn> void parallelFor(int count, int threads, Fn &&fn) {
  int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  n = std::max(1, std::min(n, count));
  if (n == 1) {
    for (int i = 0; i < count; ++i)
      fn(i);
    return;
  }
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  pool.reserve(n);
  for (int t = 0; t < n; ++t)
    pool.emplace_back([&] {
      for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1))
        fn(i);
    });
  for (auto &th : pool)
    th.join();
}

} // namespace fa4jit::cpu
