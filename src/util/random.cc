#include "util/random.h"

#include <sys/random.h>

#include "util/error.h"
#include "util/strings.h"

namespace coldstart {

std::string random_hex(size_t n_bytes) {
  std::string buf(n_bytes, '\0');
  size_t got = 0;
  while (got < n_bytes) {
    ssize_t r = getrandom(buf.data() + got, n_bytes - got, 0);
    if (r < 0) throw RuntimeError("getrandom failed: cannot make a coordinator token");
    got += static_cast<size_t>(r);
  }
  return hex(buf.data(), buf.size());
}

uint64_t random_seed() {
  uint64_t seed = 0;
  while (getrandom(&seed, sizeof seed, 0) != sizeof seed) {
  }
  return seed;
}

// splitmix64: small, fast, and fully specified, unlike std::shuffle's algorithm.
uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rng::below(uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = next();
  while (r >= limit);
  return r % n;
}

}  // namespace coldstart
