#include "util/stats.h"

#include <algorithm>
#include <cmath>
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

// P(U <= u) for u = 0 .. n1 n2.
std::vector<double> u_cdf(int n1, int n2) {
  const int N = n1 * n2;
  std::vector<double> c(static_cast<size_t>(N + 1));
  if (n1 + n2 <= kExactUpTo) {
    auto f = u_distribution(n1, n2);
    std::partial_sum(f.begin(), f.end(), c.begin());
  } else {
    const double mean = N / 2.0, sd = std::sqrt(N * (n1 + n2 + 1) / 12.0);
    for (int u = 0; u <= N; ++u) c[static_cast<size_t>(u)] = normal_cdf((u + 0.5 - mean) / sd);
  }
  for (double& x : c) x = std::min(1.0, x);
  return c;
}

}  // namespace

double mann_whitney_cdf(int n1, int n2, int u) {
  if (n1 <= 0 || n2 <= 0 || u >= n1 * n2) return 1;
  if (u < 0) return 0;
  return u_cdf(n1, n2)[static_cast<size_t>(u)];
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
  std::vector<double> d;
  d.reserve(a.size() * b.size());
  for (double x : a)
    for (double y : b) d.push_back(y - x);
  std::sort(d.begin(), d.end());
  s.estimate = percentile(d, 50);
  // The interval [d(k+1), d(N-k)] (1-based) misses the shift below and above with probability P(U <= k) each; the
  // largest k whose tail is within (1 - level) / 2. k = 0 is every difference: the widest there is.
  const int N = static_cast<int>(d.size());
  const double tail = (1 - level) / 2;
  const std::vector<double> cdf = u_cdf(s.n_a, s.n_b);
  s.p_value = mann_whitney_p(a, b, &cdf);  // the same distribution, not built again
  size_t k = 0;
  s.reached = cdf[0] <= tail;
  while (s.reached && k + 1 < static_cast<size_t>(N + 1) / 2 && cdf[k + 1] <= tail) ++k;
  s.low = d[k];
  s.high = d[static_cast<size_t>(N) - k - 1];
  s.confidence = 1 - 2 * cdf[k];
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
