// Comparing two bench runs, like google/benchmark's compare tool: per configuration (matched by its key: the same
// settings, whatever the label) and for cold start (ready) and each phase,
// the change of the median, a Mann-Whitney U test and a bootstrap interval of the change, over one value per trial
// (its slowest rank's: the ranks of one trial move together, so rank-samples are not independent); a regression is a
// slowdown that is both significant and larger than the threshold.
#pragma once
#include <string>
#include <vector>

#include "model/result.h"
#include "model/vocab.h"

namespace coldstart {
namespace report {
enum class Verdict { no_change, slower_within_threshold, faster_within_threshold, regression, improvement };
}
template <>
struct EnumNames<report::Verdict> {
  static constexpr std::pair<report::Verdict, std::string_view> names[] = {
      {report::Verdict::no_change, "no change"},
      {report::Verdict::slower_within_threshold, "slower (within threshold)"},
      {report::Verdict::faster_within_threshold, "faster (within threshold)"},
      {report::Verdict::regression, "regression"},
      {report::Verdict::improvement, "improvement"}};
};
}  // namespace coldstart

namespace coldstart::report {

struct CompareOptions {
  double threshold_pct = 10;  // a slowdown must exceed this to count as a regression
  double alpha = 0.05;        // significance level of the U test
  int resamples = 2000;       // bootstrap resamples for the interval
};

struct CompareRow {
  std::string config, phase;
  int n_base = 0, n_new = 0;
  double base_median = 0, new_median = 0;
  double change_pct = 0;                   // (new - base) / base
  double ci_low_pct = 0, ci_high_pct = 0;  // 95% bootstrap interval of change_pct
  double p_value = 1;                      // two-sided Mann-Whitney U
  Verdict verdict = Verdict::no_change;
};

struct Comparison {
  std::vector<CompareRow> rows;
  std::vector<std::string> only_in_base, only_in_new;  // configurations without a partner
  bool regression() const;
};

// Two-sided p-value of the Mann-Whitney U test (normal approximation with tie and continuity correction).
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

inline constexpr std::string_view kReady = "ready";  // compared like a phase: the trial's ready_ms

// One value per ok trial of a configuration: the phase's duration on the trial's slowest rank (for "ready", the
// trial's cold start).
std::vector<double> trial_values(const BenchResults& r, int config_id, const std::string& phase);

Comparison compare(const BenchResults& base, const BenchResults& now, const CompareOptions& o = {});
std::string render_comparison(const Comparison& c, const CompareOptions& o);

}  // namespace coldstart::report
