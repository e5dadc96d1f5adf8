#include "bench_support.h"

#include "fa4jit/codegen/formats.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace fa4jit::tools {

double attentionFlops(const AttnShape &s) {
  double pairs = 0;
  if (!s.causal) {
    pairs = double(s.seqlen_q) * s.seqlen_k;
  } else {
    for (int i = 0; i < s.seqlen_q; ++i) {
      const long visible = long(i) + s.seqlen_k - s.seqlen_q + 1;
      pairs += double(std::clamp<long>(visible, 0, s.seqlen_k));
    }
  }
  return 4.0 * s.batch * s.heads_q * s.head_dim * pairs;
}

namespace {
uint64_t splitmix(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
} // namespace

std::vector<uint16_t> randomBf16Bits(std::size_t n, uint64_t seed, float sigma) {
  std::vector<uint16_t> out(n);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      uint64_t state = seed * 0x100000001b3ull + t;
      const std::size_t begin = n * t / threads, end = n * (t + 1) / threads;
      for (std::size_t i = begin; i < end; i += 2) {
        // Box-Muller on two 24-bit uniforms in (0, 1].
        const uint64_t r = splitmix(state);
        const float u1 = (float((r >> 40) & 0xFFFFFF) + 1.0f) / 16777216.0f;
        const float u2 = float((r >> 8) & 0xFFFFFF) / 16777216.0f;
        const float rad = sigma * std::sqrt(-2.0f * std::log(u1));
        out[i] = formats::floatToBF16(rad * std::cos(6.2831853f * u2));
        if (i + 1 < end)
          out[i + 1] = formats::floatToBF16(rad * std::sin(6.2831853f * u2));
      }
    });
  for (auto &th : pool)
    th.join();
  return out;
}

ForwardArgs DeviceAttentionInputs::args(const AttnShape &s, Route route) const {
  ForwardArgs a;
  a.q = TensorDesc::contiguous(q.address(), DType::BF16, s.batch, s.heads_q, s.seqlen_q, s.head_dim);
  a.k = TensorDesc::contiguous(k.address(), DType::BF16, s.batch, s.heads_kv, s.seqlen_k, s.head_dim);
  a.v = TensorDesc::contiguous(v.address(), DType::BF16, s.batch, s.heads_kv, s.seqlen_k, s.head_dim);
  a.o = TensorDesc::contiguous(o.address(), DType::BF16, s.batch, s.heads_q, s.seqlen_q, s.head_dim);
  a.lse = lse.address();
  a.route = route;
  a.causal = s.causal;
  return a;
}

llvm::Expected<DeviceAttentionInputs> makeDeviceInputs(Engine &engine, const AttnShape &s, uint64_t seed,
                                                       std::vector<uint16_t> *host_q, std::vector<uint16_t> *host_k,
                                                       std::vector<uint16_t> *host_v) {
  const std::size_t nq = std::size_t(s.batch) * s.heads_q * s.seqlen_q * s.head_dim;
  const std::size_t nk = std::size_t(s.batch) * s.heads_kv * s.seqlen_k * s.head_dim;
  DeviceAttentionInputs in;
  auto fill = [&](runtime::DeviceBuffer &dst, std::size_t n, uint64_t sd, std::vector<uint16_t> *keep) -> llvm::Error {
    std::vector<uint16_t> bits = randomBf16Bits(n, sd);
    auto buf = runtime::DeviceBuffer::allocate(engine.driver(), n * 2);
    if (!buf)
      return buf.takeError();
    if (auto e = buf->copyFromHost(bits.data(), n * 2))
      return e;
    dst = std::move(*buf);
    if (keep)
      *keep = std::move(bits);
    return llvm::Error::success();
  };
  if (auto e = fill(in.q, nq, seed * 3 + 1, host_q))
    return e;
  if (auto e = fill(in.k, nk, seed * 3 + 2, host_k))
    return e;
  if (auto e = fill(in.v, nk, seed * 3 + 3, host_v))
    return e;
  auto o = runtime::DeviceBuffer::allocate(engine.driver(), nq * 2);
  if (!o)
    return o.takeError();
  in.o = std::move(*o);
  auto lse = runtime::DeviceBuffer::allocate(engine.driver(), std::size_t(s.batch) * s.heads_q * s.seqlen_q * 4);
  if (!lse)
    return lse.takeError();
  in.lse = std::move(*lse);
  // Poisoned (NaN) so an element the kernel does not write cannot pass as a result.
  if (auto e = in.o.fill(0xFF))
    return e;
  return in;
}

llvm::Expected<Timing> timeOnDevice(Engine &engine, const std::function<llvm::Error(int)> &fn, int warmup,
                                    int reps) {
  for (int i = 0; i < warmup; ++i)
    if (auto e = fn(i))
      return e;
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto start = runtime::Event::create(engine.driver());
    auto end = runtime::Event::create(engine.driver());
    if (!start)
      return start.takeError();
    if (!end)
      return end.takeError();
    if (auto e = start->record())
      return e;
    if (auto e = fn(i))
      return e;
    if (auto e = end->record())
      return e;
    auto t = runtime::Event::elapsedMs(*start, *end);
    if (!t)
      return t.takeError();
    ms.push_back(*t);
  }
  std::sort(ms.begin(), ms.end());
  Timing t;
  t.reps = reps;
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  return t;
}

} // namespace fa4jit::tools
