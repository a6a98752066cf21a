// Comparing two bench runs: per configuration (matched by its key: the same settings, whatever the label), the
// headline is cold start (ready), over one value per ok trial (the ranks of one trial move together, so
// rank-samples are not independent): the shift (Hodges-Lehmann) with its 95% interval and a Mann-Whitney U test. A
// regression is an interval wholly above zero with a shift beyond the threshold; with too few trials for a 95%
// interval the comparison says so instead of passing. Phases explain the headline and never decide it: their p-values
// are Holm-adjusted over every phase compared, and a phase change must also exceed an absolute floor in ms.
#pragma once
#include <string>
#include <vector>

#include "model/result.h"
#include "model/vocab.h"

namespace coldstart {
namespace report {
enum class Verdict {
  no_change,
  slower_within_threshold,
  faster_within_threshold,
  regression,   // ready only
  improvement,  // ready only
  slower,       // a phase: beyond noise, the threshold and the floor
  faster,
  too_few,  // too few trials for a 95% interval
};
}
template <>
struct EnumNames<report::Verdict> {
  static constexpr std::pair<report::Verdict, std::string_view> names[] = {
      {report::Verdict::no_change, "no change measured"},
      {report::Verdict::slower_within_threshold, "slower (within threshold)"},
      {report::Verdict::faster_within_threshold, "faster (within threshold)"},
      {report::Verdict::regression, "regression"},
      {report::Verdict::improvement, "improvement"},
      {report::Verdict::slower, "slower"},
      {report::Verdict::faster, "faster"},
      {report::Verdict::too_few, "too few trials to decide"}};
};
}  // namespace coldstart

namespace coldstart::report {

struct CompareOptions {
  double threshold_pct = 10;  // a slowdown must exceed this to count as a regression
  double alpha = 0.05;        // 1 - the interval's level; the U test's significance level
  double floor_ms = 5;        // a phase's change must also exceed this many ms to be called slower or faster
};

struct CompareRow {
  std::string config, phase;
  int n_base = 0, n_new = 0;
  double base_median = 0, new_median = 0;
  double shift_ms = 0;                     // Hodges-Lehmann shift, new - base
  double change_pct = 0;                   // shift_ms / base_median
  double ci_low_pct = 0, ci_high_pct = 0;  // its interval, in % of base_median
  double confidence = 0;                   // what the interval reaches (below 1 - alpha: too few trials)
  double p_value = 1;                      // two-sided Mann-Whitney U
  double p_adjusted = 1;                   // phases: Holm-adjusted over every phase row; ready: p_value
  Verdict verdict = Verdict::no_change;
  bool headline() const;  // the ready row
};

// Exit status of report --compare (docs/report.md): 0 compared and no regression, 1 a regression, 3 undecided (too
// few trials for some configuration's ready, or no configuration in common). 2 is bad input (the CLI's).
enum class CompareStatus { pass = 0, regression = 1, undecided = 3 };

struct Comparison {
  std::vector<CompareRow> rows;
  std::vector<std::string> only_in_base, only_in_new;  // configurations without a partner
  bool regression() const;
  CompareStatus status() const;
};

inline constexpr std::string_view kReady = "ready";  // compared like a phase: the trial's ready_ms

// One value per ok trial of a configuration: the phase's longest duration over the trial's ranks (for "ready", the
// trial's cold start: its slowest rank's).
std::vector<double> trial_values(const BenchResults& r, int config_id, const std::string& phase);

Comparison compare(const BenchResults& base, const BenchResults& now, const CompareOptions& o = {});
std::string render_comparison(const Comparison& c, const CompareOptions& o);

}  // namespace coldstart::report
