#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <unistd.h>

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

Verdict headline_verdict(const CompareRow& r, const Shift& s, const CompareOptions& o) {
  if (!s.reached) return Verdict::too_few;
  if (s.low > 0) return r.change_pct > o.threshold_pct ? Verdict::regression : Verdict::slower_within_threshold;
  if (s.high < 0) return r.change_pct < -o.threshold_pct ? Verdict::improvement : Verdict::faster_within_threshold;
  return Verdict::no_change;
}

Verdict phase_verdict(const CompareRow& r, const CompareOptions& o) {
  if (r.confidence < 1 - o.alpha) return Verdict::too_few;
  if (r.p_adjusted >= o.alpha || std::abs(r.change_pct) <= o.threshold_pct || std::abs(r.shift_ms) <= o.floor_ms)
    return Verdict::no_change;
  return r.shift_ms > 0 ? Verdict::slower : Verdict::faster;
}

}  // namespace

bool CompareRow::headline() const { return phase == kReady; }

bool Comparison::regression() const {
  return std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.verdict == Verdict::regression; });
}

CompareStatus Comparison::status() const {
  if (regression()) return CompareStatus::regression;
  bool any = false;
  for (const auto& r : rows)
    if (r.headline()) {
      any = true;
      if (r.verdict == Verdict::too_few) return CompareStatus::undecided;
    }
  return any ? CompareStatus::pass : CompareStatus::undecided;
}

std::vector<double> trial_values(const BenchResults& r, int config_id, const std::string& phase) {
  std::vector<double> v;
  for (const auto& t : r.trials) {
    if (t.config_id != config_id || !t.ok()) continue;
    if (phase == kReady) {
      if (auto ready = t.ready_ms()) v.push_back(*ready);
      continue;
    }
    std::optional<double> longest;
    for (const auto& rank : t.ranks)
      if (const PhaseRecord* p = rank.phase(phase)) longest = std::max(longest.value_or(p->dur_ms), p->dur_ms);
    if (longest) v.push_back(*longest);
  }
  return v;
}

Comparison compare(const BenchResults& base, const BenchResults& now, const CompareOptions& o) {
  Comparison c;
  std::map<std::string, int> base_ids;
  for (const auto& cfg : base.configs) base_ids[cfg.key()] = cfg.id;
  std::map<std::string, bool> matched;
  std::vector<size_t> phase_rows;
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
      const Shift s = hodges_lehmann(a, b, 1 - o.alpha);
      CompareRow row;
      row.config = cfg.label();
      row.phase = ph;
      row.n_base = s.n_a;
      row.n_new = s.n_b;
      row.base_median = median_of(a);
      row.new_median = median_of(b);
      const double denom = std::max(std::abs(row.base_median), 1e-9);
      row.shift_ms = s.estimate;
      row.change_pct = 100 * s.estimate / denom;
      row.ci_low_pct = 100 * s.low / denom;
      row.ci_high_pct = 100 * s.high / denom;
      row.confidence = s.confidence;
      row.p_value = row.p_adjusted = s.p_value;
      if (row.headline())
        row.verdict = headline_verdict(row, s, o);
      else
        phase_rows.push_back(c.rows.size());
      c.rows.push_back(std::move(row));
    }
  }
  // Phases are many tests at once: Holm's adjustment over all of them, so that noise in a few dozen phases does not
  // make one of them look significant.
  std::vector<double> p;
  for (size_t i : phase_rows) p.push_back(c.rows[i].p_value);
  const std::vector<double> adjusted = holm(p);
  for (size_t k = 0; k < phase_rows.size(); ++k) {
    CompareRow& row = c.rows[phase_rows[k]];
    row.p_adjusted = adjusted[k];
    row.verdict = phase_verdict(row, o);
  }
  for (const auto& cfg : base.configs)
    if (!matched.count(cfg.key())) c.only_in_base.push_back(cfg.label());
  return c;
}

std::string render_comparison(const Comparison& c, const CompareOptions& o) {
  std::string out = fmt::format("{:<44} {:<15} {:>7} {:>10} {:>10} {:>8} {:>19} {:>8}  {}\n", "configuration", "phase",
                                "n", "base ms", "new ms", "change", "interval", "p", "verdict");
  for (const auto& r : c.rows) {
    // An interval that could not reach the asked-for level shows the level it reaches.
    std::string interval = fmt::format("[{:+.1f}%, {:+.1f}%]", r.ci_low_pct, r.ci_high_pct);
    if (r.confidence < 1 - o.alpha - 1e-9) interval += fmt::format(" ({:.0f}%)", 100 * r.confidence);
    out += fmt::format("{:<44} {:<15} {:>7} {:>10.1f} {:>10.1f} {:>+7.1f}% {:>19} {:>8.3f}  {}\n", r.config, r.phase,
                       fmt::format("{}/{}", r.n_base, r.n_new), r.base_median, r.new_median, r.change_pct, interval,
                       r.p_adjusted, r.verdict);
  }
  for (const auto& l : c.only_in_base) out += "only in the baseline: " + l + "\n";
  for (const auto& l : c.only_in_new) out += "only in the new run: " + l + "\n";
  out += fmt::format(
      "n: ok trials, baseline/new; one value per trial (ready: its slowest rank's; a phase: its longest over the "
      "trial's ranks). change: the Hodges-Lehmann shift as a share of the baseline's median, with its {:.0f}% "
      "interval. ready decides: a regression is an interval above zero and a shift beyond {:.0f}%. Phases explain "
      "it: their p is Holm-adjusted over the {} phases compared, and a change must also exceed {} ms. ready counts "
      "from "
      "each rank's process start: the lab's reading at spawn, or under an outside launcher /proc's, in ticks of {} "
      "ms.\n",
      100 * (1 - o.alpha), o.threshold_pct,
      std::count_if(c.rows.begin(), c.rows.end(), [](const CompareRow& r) { return !r.headline(); }), o.floor_ms,
      1000 / std::max(1L, sysconf(_SC_CLK_TCK)));
  const auto smallest = [&] {
    int n = 1;
    while (smallest_p(n, n) >= o.alpha) ++n;
    return n;
  };
  switch (c.status()) {
    case CompareStatus::regression: out += "result: REGRESSION\n"; break;
    case CompareStatus::undecided:
      if (std::none_of(c.rows.begin(), c.rows.end(), [](const CompareRow& r) { return r.headline(); }))
        out += "result: NOTHING COMPARED: the files have no configuration with a ready value in common\n";
      else
        out += fmt::format(
            "result: UNDECIDED: too few trials for a {:.0f}% interval of ready (at least {} a side); run more "
            "trials\n",
            100 * (1 - o.alpha), smallest());
      break;
    case CompareStatus::pass: out += "result: no regression\n"; break;
  }
  return out;
}

}  // namespace coldstart::report
