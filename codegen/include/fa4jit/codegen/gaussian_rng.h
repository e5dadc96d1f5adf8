#pragma once
// A small deterministic Gaussian generator (splitmix64 + Box-Muller), identical on every
// platform and standard library, so fitted classifiers and accuracy tables are reproducible
// from a seed (std::normal_distribution is implementation-defined).
#include <cmath>
#include <cstdint>

namespace fa4jit {

class GaussianRng {
public:
  explicit GaussianRng(uint64_t seed) : state_(seed) {}
  uint64_t nextU64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): never 0, so log() below is finite.
  double uniform() { return (static_cast<double>(nextU64() >> 11) + 0.5) * 0x1.0p-53; }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double a = 6.283185307179586 * uniform();
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

} // namespace fa4jit
