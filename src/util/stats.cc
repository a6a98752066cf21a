#include "util/stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

namespace coldstart {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Stats summarize(std::vector<double> samples) {
  Stats s;
  s.n = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = percentile(samples, 50);
  s.p90 = percentile(samples, 90);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return s;
}

namespace {

constexpr int kExactUpTo = 40;  // values in all; beyond, the normal approximation

// Counts of orderings by U for n1 and n2 values, divided by their total: the exact null distribution.
std::vector<double> u_distribution(int n1, int n2) {
  // f[m][u] over the second sample's size, built up one value of the first sample at a time (f(m, n, u) =
  // f(m-1, n, u-n) + f(m, n-1, u)), in doubles: C(40, 20) is 1.4e11, exact in a double.
  const int max_u = n1 * n2;
  std::vector<std::vector<double>> prev(static_cast<size_t>(n2 + 1), std::vector<double>(max_u + 1, 0));
  for (int n = 0; n <= n2; ++n) prev[static_cast<size_t>(n)][0] = 1;  // m = 0: one ordering, U = 0
  for (int m = 1; m <= n1; ++m) {
    std::vector<std::vector<double>> cur(static_cast<size_t>(n2 + 1), std::vector<double>(max_u + 1, 0));
    cur[0][0] = 1;
    for (int n = 1; n <= n2; ++n)
      for (int u = 0; u <= m * n; ++u)
        cur[static_cast<size_t>(n)][static_cast<size_t>(u)] =
            (u >= n ? prev[static_cast<size_t>(n)][static_cast<size_t>(u - n)] : 0) +
            cur[static_cast<size_t>(n - 1)][static_cast<size_t>(u)];
    prev = std::move(cur);
  }
  std::vector<double> f = prev[static_cast<size_t>(n2)];
  const double total = std::accumulate(f.begin(), f.end(), 0.0);
  for (double& x : f) x /= total;
  return f;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// P(U <= u) by the normal approximation (continuity-corrected, no tie correction), one u at a time. In 64 bits and
// doubles: n1 n2 (n1 + n2 + 1) passes 2^31 at 1,024 values a side, and when it was an int product it overflowed there
// into a negative variance, a NaN distribution, and an interval that never reached 95% ("too few trials" at 1,100 a
// side). Every value is the one the table of them gave before (the same double operations on the same exact
// integers), so intervals below that size are unchanged.
double normal_u_cdf(int n1, int n2, int64_t u) {
  const auto N = static_cast<int64_t>(n1) * n2;
  const double mean = static_cast<double>(N) / 2.0;
  const double sd = std::sqrt(static_cast<double>(N) * static_cast<double>(n1 + n2 + 1) / 12.0);
  return std::min(1.0, normal_cdf((static_cast<double>(u) + 0.5 - mean) / sd));
}

// P(U <= u) for u = 0 .. n1 n2, exact: only for n1 + n2 <= kExactUpTo (at most 400 + 1 values).
std::vector<double> u_cdf(int n1, int n2) {
  const int N = n1 * n2;
  std::vector<double> c(static_cast<size_t>(N + 1));
  auto f = u_distribution(n1, n2);
  std::partial_sum(f.begin(), f.end(), c.begin());
  for (double& x : c) x = std::min(1.0, x);
  return c;
}

// Doubles in their order as unsigned integers (-0 just below +0), so that bisection over them ends in at most 64 steps.
uint64_t order_key(double x) {
  const auto u = std::bit_cast<uint64_t>(x);
  return (u >> 63) != 0 ? ~u : (u | (uint64_t{1} << 63));
}
double from_order_key(uint64_t k) { return std::bit_cast<double>((k >> 63) != 0 ? (k & ~(uint64_t{1} << 63)) : ~k); }

// How many differences b_j - a_i (as doubles compute them) are <= t, for sorted a and b. Rounding is monotone, so for
// each a_i the differences <= t are a prefix of b, and that prefix only grows as a_i grows: one pass over each.
int64_t differences_at_most(const std::vector<double>& a, const std::vector<double>& b, double t) {
  int64_t count = 0;
  size_t j = 0;
  for (double x : a) {
    while (j < b.size() && b[j] - x <= t) ++j;
    count += static_cast<int64_t>(j);
  }
  return count;
}

// The smallest difference b_j - a_i above t (sorted a and b; one must exist): for each a_i (ascending), the first b_j
// that gives one, that index only moving up as a_i grows.
double smallest_difference_above(const std::vector<double>& a, const std::vector<double>& b, double t) {
  double best = std::numeric_limits<double>::infinity();
  size_t j = 0;
  for (double x : a) {
    while (j < b.size() && b[j] - x <= t) ++j;
    if (j < b.size()) best = std::min(best, b[j] - x);
  }
  return best == 0 ? 0.0 : best;
}

}  // namespace

double mann_whitney_cdf(int n1, int n2, int64_t u) {
  if (n1 <= 0 || n2 <= 0 || u >= static_cast<int64_t>(n1) * n2) return 1;
  if (u < 0) return 0;
  if (n1 + n2 <= kExactUpTo) return u_cdf(n1, n2)[static_cast<size_t>(u)];
  return normal_u_cdf(n1, n2, u);
}

double kth_difference(const std::vector<double>& a, const std::vector<double>& b, int64_t k) {
  if (a.empty() || b.empty()) return 0;
  // The k-th difference is the smallest t with more than k differences <= t (the count steps only at differences).
  // Bisection keeps lo and hi with count(lo) <= k < count(hi), taking turns between the middle value (fast where the
  // differences are dense, as near the median) and the middle double in their order (the range of doubles between
  // lo and hi halves every second step, so at most ~128 steps, each one pass over both samples); once at most
  // 2 (m + n) differences lie in (lo, hi], they are gathered and the one wanted picked from them.
  const int64_t total = static_cast<int64_t>(a.size()) * static_cast<int64_t>(b.size());
  const int64_t want = std::clamp<int64_t>(k, 0, total - 1) + 1;
  const auto plus0 = [](double t) { return t == 0 ? 0.0 : t; };  // -0 and +0 count alike; y - y is +0
  double lo = b.front() - a.back(), hi = b.back() - a.front();   // the smallest and largest difference
  int64_t c_lo = differences_at_most(a, b, lo), c_hi = total;
  if (c_lo >= want) return plus0(lo);
  const auto limit = static_cast<int64_t>(2 * (a.size() + b.size()));
  for (int step = 0; c_hi - c_lo > limit; ++step) {
    const uint64_t k_lo = order_key(lo), k_hi = order_key(hi);
    if (k_hi - k_lo <= 1) return plus0(hi);  // no double in between: hi is the difference
    double mid = lo / 2 + hi / 2;
    if (step % 2 == 1 || !(mid > lo && mid < hi)) mid = from_order_key(k_lo + (k_hi - k_lo) / 2);
    const int64_t c = differences_at_most(a, b, mid);
    if (c >= want)
      hi = mid, c_hi = c;
    else
      lo = mid, c_lo = c;
  }
  // The differences in (lo, hi]: for each a_i (ascending), those of b from the first above lo to the last at or
  // below hi, both bounds moving only up.
  std::vector<double> between;
  between.reserve(static_cast<size_t>(c_hi - c_lo));
  size_t from = 0, to = 0;
  for (double x : a) {
    while (from < b.size() && b[from] - x <= lo) ++from;
    while (to < b.size() && b[to] - x <= hi) ++to;
    for (size_t j = from; j < to; ++j) between.push_back(b[j] - x);
  }
  const auto nth = between.begin() + (want - c_lo - 1);
  std::nth_element(between.begin(), nth, between.end());
  return plus0(*nth);
}

double smallest_p(int n1, int n2) {
  if (n1 <= 0 || n2 <= 0) return 1;
  return std::min(1.0, 2 * mann_whitney_cdf(n1, n2, 0));
}

namespace {

// mann_whitney_p, with the exact distribution for these sizes when the caller has it already (cdf: u_cdf(n1, n2)).
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b, const std::vector<double>* cdf) {
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return 1;
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.emplace_back(x, 0);
  for (double x : b) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end());
  // Mid-ranks for ties, and the tie correction term sum(t^3 - t).
  double rank_sum_a = 0, ties = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    double mid = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_sum_a += mid;
    double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    i = j;
  }
  const double N = static_cast<double>(n1 + n2), N1 = static_cast<double>(n1), N2 = static_cast<double>(n2);
  const double u = rank_sum_a - N1 * (N1 + 1) / 2;
  if (ties == 0 && n1 + n2 <= kExactUpTo) {
    const int lower = static_cast<int>(std::lround(std::min(u, N1 * N2 - u)));
    if (!cdf) return std::min(1.0, 2 * mann_whitney_cdf(static_cast<int>(n1), static_cast<int>(n2), lower));
    return std::min(1.0, 2 * (lower >= static_cast<int>(n1 * n2) ? 1.0 : (*cdf)[static_cast<size_t>(lower)]));
  }
  const double mean = N1 * N2 / 2;
  const double var = N1 * N2 / 12 * ((N + 1) - ties / (N * (N - 1)));
  if (var <= 0) return 1;
  const double z = (std::abs(u - mean) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(std::max(0.0, z) / std::sqrt(2.0)));
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  return mann_whitney_p(a, b, nullptr);
}

Shift hodges_lehmann(const std::vector<double>& a, const std::vector<double>& b, double level) {
  Shift s;
  s.n_a = static_cast<int>(a.size());
  s.n_b = static_cast<int>(b.size());
  if (a.empty() || b.empty()) return s;
  // The m n differences are never formed: each order statistic read from them is selected (kth_difference) from the
  // two samples sorted, O((m + n) log(m + n)) in all, and equal to what sorting all of them gives.
  std::vector<double> sa(a), sb(b);
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  const int64_t N = static_cast<int64_t>(sa.size()) * static_cast<int64_t>(sb.size());
  // The median of the differences, with percentile()'s arithmetic.
  const double pos = 50 / 100.0 * static_cast<double>(N - 1);
  const auto mid_lo = static_cast<int64_t>(std::floor(pos));
  const int64_t mid_hi = std::min(mid_lo + 1, N - 1);
  const double frac = pos - static_cast<double>(mid_lo);
  const double d_lo = kth_difference(sa, sb, mid_lo);
  // The next order statistic: d_lo again when more than mid_hi differences are <= d_lo, else the smallest above it.
  double d_hi = d_lo;
  if (mid_hi != mid_lo && differences_at_most(sa, sb, d_lo) <= mid_hi) d_hi = smallest_difference_above(sa, sb, d_lo);
  s.estimate = d_lo + (d_hi - d_lo) * frac;
  // The interval [d(k+1), d(N-k)] (1-based) misses the shift below and above with probability P(U <= k) each; the
  // largest k whose tail is within (1 - level) / 2. k = 0 is every difference: the widest there is.
  const double tail = (1 - level) / 2;
  const int64_t k_max = (N + 1) / 2 - 1;  // the interval keeps at least its middle difference
  int64_t k = 0;
  double tail_at_k = 1;
  if (s.n_a + s.n_b <= kExactUpTo) {
    const std::vector<double> cdf = u_cdf(s.n_a, s.n_b);
    s.p_value = mann_whitney_p(a, b, &cdf);  // the same distribution, not built again
    s.reached = cdf[0] <= tail;
    while (s.reached && k + 1 <= k_max && cdf[static_cast<size_t>(k + 1)] <= tail) ++k;
    tail_at_k = cdf[static_cast<size_t>(k)];
  } else {
    // The normal approximation rises with u: bisection finds the k the walk up from 0 found, in O(log N) steps.
    s.p_value = mann_whitney_p(a, b, nullptr);
    s.reached = normal_u_cdf(s.n_a, s.n_b, 0) <= tail;
    if (s.reached) {
      int64_t hi = k_max;
      while (k < hi) {
        const int64_t m = k + (hi - k + 1) / 2;
        if (normal_u_cdf(s.n_a, s.n_b, m) <= tail)
          k = m;
        else
          hi = m - 1;
      }
    }
    tail_at_k = normal_u_cdf(s.n_a, s.n_b, k);
  }
  s.low = kth_difference(sa, sb, k);
  s.high = kth_difference(sa, sb, N - k - 1);
  s.confidence = 1 - 2 * tail_at_k;
  return s;
}

std::vector<double> holm(const std::vector<double>& p) {
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return p[i] < p[j]; });
  std::vector<double> out(p.size());
  double running = 0;
  const double m = static_cast<double>(p.size());
  for (size_t r = 0; r < order.size(); ++r) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(r)) * p[order[r]]));
    out[order[r]] = running;
  }
  return out;
}

}  // namespace coldstart
