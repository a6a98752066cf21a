// Order statistics over trial samples, and the rank-based estimates that compare two sets of them.
#pragma once
#include <cstdint>
#include <vector>

namespace coldstart {

struct Stats {
  int n = 0;
  double median = 0, min = 0, max = 0, p90 = 0, mean = 0;
};

// Percentiles interpolate linearly between order statistics (numpy's default). Empty input gives n == 0.
Stats summarize(std::vector<double> samples);
double percentile(const std::vector<double>& sorted, double p);

// A shift between two samples: the Hodges-Lehmann estimate (the median of every difference b_j - a_i) and its
// distribution-free confidence interval, read from the same sorted differences at the ranks the Mann-Whitney U
// distribution gives (exact up to 40 values in all, its normal approximation beyond). The differences are not formed:
// each order statistic is selected from the two sorted samples (kth_difference), O((m + n) log(m + n)) in all, so
// 10,000 values a side take milliseconds, not 10^8 differences sorted. No resampling: the same input
// gives the same interval. With few values the asked-for confidence cannot be reached (3 against 3: every ordering
// has probability 1/20, so no interval is narrower than all differences at more than 90%); the interval is then
// the widest, all differences, and `confidence` says what it reaches.
struct Shift {
  int n_a = 0, n_b = 0;
  double estimate = 0;       // b - a
  double low = 0, high = 0;  // the interval of b - a
  double confidence = 0;     // what the interval reaches (at least the level asked for when `reached`)
  bool reached = false;      // the asked-for level was reached
  double p_value = 1;        // two-sided Mann-Whitney U test of no shift
  bool spans_zero() const { return low <= 0 && high >= 0; }
};
// n_a == 0 or n_b == 0 gives a Shift with n == 0 and p 1.
Shift hodges_lehmann(const std::vector<double>& a, const std::vector<double>& b, double level = 0.95);

// P(U <= u) for the Mann-Whitney U statistic of samples of n1 and n2 values with no ties and no shift: exact up to 40
// values in all, else the normal approximation with continuity correction (computed in 64 bits and doubles: any size).
double mann_whitney_cdf(int n1, int n2, int64_t u);

// The k-th smallest (0-based, clamped to 0 .. m n - 1) of the m n differences b_j - a_i, each as a double subtraction
// gives it, for a and b sorted ascending, without forming them: a bisection between two values, each step counting
// the differences at or below its middle in one pass of two pointers over both samples (O(m + n)), at most ~128 steps
// (14 at 10,000 trial times a side), until at most 2 (m + n) differences are left to pick from. Exactly the element
// sorting all m n differences puts at k (a zero is +0). 0 for an empty sample.
double kth_difference(const std::vector<double>& a, const std::vector<double>& b, int64_t k);
// The smallest two-sided p-value the U test can give for n1 and n2 values (2 / C(n1+n2, n1)): with fewer values than
// make it smaller than alpha, no shift, however large, is significant.
double smallest_p(int n1, int n2);

// Two-sided p-value of the Mann-Whitney U test: exact without ties up to 40 values in all, else the normal
// approximation with tie and continuity correction.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// Holm's step-down adjustment of p-values for testing them together (same order as given).
std::vector<double> holm(const std::vector<double>& p);

}  // namespace coldstart
