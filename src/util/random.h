// Randomness: kernel entropy for tokens, and a seeded generator whose shuffles are the same on every platform (so a
// seed reproduces a trial order).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace coldstart {

// n bytes from getrandom(2), hex-encoded.
std::string random_hex(size_t n_bytes);
uint64_t random_seed();

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n), without modulo bias.
  uint64_t below(uint64_t n);
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

}  // namespace coldstart
