#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>

#include "model/phases.h"
#include "util/stats.h"

namespace coldstart::report {
namespace {

double median_of(std::vector<double> v) { return summarize(std::move(v)).median; }

// What is compared, in order: cold start (ready) first, then every phase of the table that is not a wait on peers,
// when both runs have it.
std::vector<std::string> compared() {
  std::vector<std::string> out{std::string(kReady)};
  for (const auto& p : kPhaseTable)
    if (p.kind != PhaseKind::wait) out.emplace_back(p.name);
  return out;
}

}  // namespace

bool Comparison::regression() const {
  return std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.verdict == Verdict::regression; });
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
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
  const double mean = N1 * N2 / 2;
  const double var = N1 * N2 / 12 * ((N + 1) - ties / (N * (N - 1)));
  if (var <= 0) return 1;
  const double z = (std::abs(u - mean) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(std::max(0.0, z) / std::sqrt(2.0)));
}

std::vector<double> trial_values(const BenchResults& r, int config_id, const std::string& phase) {
  std::vector<double> v;
  for (const auto& t : r.trials) {
    if (t.config_id != config_id || !t.ok()) continue;
    if (phase == kReady) {
      if (auto ready = t.ready_ms()) v.push_back(*ready);
      continue;
    }
    std::optional<double> slowest;
    for (const auto& rank : t.ranks)
      if (const PhaseRecord* p = rank.phase(phase)) slowest = std::max(slowest.value_or(p->dur_ms), p->dur_ms);
    if (slowest) v.push_back(*slowest);
  }
  return v;
}

Comparison compare(const BenchResults& base, const BenchResults& now, const CompareOptions& o) {
  Comparison c;
  std::map<std::string, int> base_ids;
  for (const auto& cfg : base.configs) base_ids[cfg.key()] = cfg.id;
  std::map<std::string, bool> matched;
  std::mt19937_64 rng(12345);  // fixed: the same inputs give the same interval
  for (const auto& cfg : now.configs) {
    auto it = base_ids.find(cfg.key());
    if (it == base_ids.end()) {
      c.only_in_new.push_back(cfg.label());
      continue;
    }
    matched[cfg.key()] = true;
    for (const std::string& ph : compared()) {
      auto a = trial_values(base, it->second, ph), b = trial_values(now, cfg.id, ph);
      if (a.empty() || b.empty()) continue;
      CompareRow row;
      row.config = cfg.label();
      row.phase = ph;
      row.n_base = static_cast<int>(a.size());
      row.n_new = static_cast<int>(b.size());
      row.base_median = median_of(a);
      row.new_median = median_of(b);
      const double denom = std::max(std::abs(row.base_median), 1e-9);
      row.change_pct = 100 * (row.new_median - row.base_median) / denom;
      // Bootstrap: resample both sides, the change of the medians.
      std::vector<double> changes;
      changes.reserve(static_cast<size_t>(o.resamples));
      std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
      std::vector<double> ra(a.size()), rb(b.size());
      for (int k = 0; k < o.resamples; ++k) {
        for (auto& x : ra) x = a[pick_a(rng)];
        for (auto& x : rb) x = b[pick_b(rng)];
        changes.push_back(100 * (median_of(rb) - median_of(ra)) / std::max(std::abs(median_of(ra)), 1e-9));
      }
      std::sort(changes.begin(), changes.end());
      row.ci_low_pct = percentile(changes, 2.5);
      row.ci_high_pct = percentile(changes, 97.5);
      row.p_value = mann_whitney_p(a, b);
      const bool significant = row.p_value < o.alpha;
      if (!significant)
        row.verdict = Verdict::no_change;
      else if (row.change_pct > o.threshold_pct)
        row.verdict = Verdict::regression;
      else if (row.change_pct < -o.threshold_pct)
        row.verdict = Verdict::improvement;
      else
        row.verdict = row.change_pct > 0 ? Verdict::slower_within_threshold : Verdict::faster_within_threshold;
      c.rows.push_back(std::move(row));
    }
  }
  for (const auto& cfg : base.configs)
    if (!matched.count(cfg.key())) c.only_in_base.push_back(cfg.label());
  return c;
}

std::string render_comparison(const Comparison& c, const CompareOptions& o) {
  std::string out = fmt::format("{:<44} {:<15} {:>10} {:>10} {:>8} {:>19} {:>8}  {}\n", "configuration", "phase",
                                "base ms", "new ms", "change", "95% interval", "p (U)", "verdict");
  for (const auto& r : c.rows)
    out += fmt::format("{:<44} {:<15} {:>10.1f} {:>10.1f} {:>+7.1f}% {:>19} {:>8.3f}  {}\n", r.config, r.phase,
                       r.base_median, r.new_median, r.change_pct,
                       fmt::format("[{:+.1f}%, {:+.1f}%]", r.ci_low_pct, r.ci_high_pct), r.p_value, r.verdict);
  for (const auto& l : c.only_in_base) out += "only in the baseline: " + l + "\n";
  for (const auto& l : c.only_in_new) out += "only in the new run: " + l + "\n";
  out += fmt::format(
      "one value per ok trial (its slowest rank); a regression is slower by more than {:.0f}% with p < {}\n",
      o.threshold_pct, o.alpha);
  out += c.regression() ? "result: REGRESSION\n" : "result: no regression\n";
  return out;
}

}  // namespace coldstart::report
