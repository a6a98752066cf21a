#include "analysis/disturbance.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "analysis/growth.h"  // trial_value: a phase on a trial's critical path
#include "model/phases.h"
#include "model/summary.h"
#include "util/strings.h"

namespace coldstart::analysis {
namespace {

// The phases the log could lengthen: NCCL's init and the first collective, at the level the worker measures them.
std::vector<std::string_view> judged_phases(Worker worker) {
  if (worker == Worker::torch) return {phase::init_process_group, phase::barrier_enqueue, phase::barrier_wait};
  return {phase::comm_init, phase::first_enqueue, phase::first_wait};
}

// Per ok trial of a configuration, the phase on its critical path (the slowest rank's; "ready": the trial's).
std::vector<double> values(const BenchResults& r, int config_id, std::string_view name) {
  std::vector<double> v;
  for (const auto& t : r.trials)
    if (t.config_id == config_id && t.ok())
      if (auto ms = trial_value(t, std::string(name))) v.push_back(*ms);
  return v;
}

// "first_enqueue +65 ms [45 to 80]"
std::string shift_text(const PhaseShift& p) {
  const Shift& s = p.shift;
  return fmt::format("{} {}{} ms [{} to {}]", p.phase, s.estimate >= 0 ? "+" : "-", format_ms(std::abs(s.estimate)),
                     format_ms(s.low), format_ms(s.high));
}

std::string pair_line(const LogDisturbance& d) {
  std::vector<std::string> beyond, within;
  for (const auto& p : d.phases)
    if (p.shift.n_a > 0) (p.beyond_noise() ? beyond : within).push_back(shift_text(p));
  if (beyond.empty() && within.empty()) return fmt::format("  {}: no ok trials on both sides\n", d.scope);
  const Shift& first = d.phases.front().shift;
  const std::string n = fmt::format("{:.0f}% interval{}, n {}/{}", 100 * first.confidence,
                                    first.reached ? "" : ": too few trials for 95%", first.n_a, first.n_b);
  if (beyond.empty())
    return fmt::format("  {}: within noise on every phase ({}; {})\n", d.scope, join(within, ", "), n);
  return fmt::format("  {}: beyond noise: {} ({}); read {} from a run with --nccl-log off{}\n", d.scope,
                     join(beyond, ", "), n, beyond.size() == 1 ? "it" : "them",
                     within.empty() ? "" : "; within noise: " + join(within, ", "));
}

}  // namespace

bool LogDisturbance::beyond_noise() const {
  return std::any_of(phases.begin(), phases.end(), [](const PhaseShift& p) { return p.beyond_noise(); });
}

std::vector<LogDisturbance> log_disturbance(const BenchResults& r) {
  std::map<std::string, int> by_key;
  for (const auto& c : r.configs) by_key[c.key()] = c.id;
  std::vector<LogDisturbance> out;
  for (const auto& c : r.configs) {
    if (c.nccl_log == NcclLog::off) continue;
    Config off = c;
    off.nccl_log = NcclLog::off;
    auto it = by_key.find(off.key());
    if (it == by_key.end()) continue;
    LogDisturbance d;
    Config unlogged = c;
    unlogged.nccl_log = NcclLog::light;  // the label names the log only where it is not light
    d.scope = config_label(unlogged, r.context.nccl);
    d.level = c.nccl_log;
    d.config_off = it->second;
    d.config_on = c.id;
    auto names = judged_phases(r.spec.worker);
    names.push_back("ready");
    for (auto name : names)
      d.phases.push_back({std::string(name), hodges_lehmann(values(r, d.config_off, name), values(r, c.id, name))});
    out.push_back(std::move(d));
  }
  return out;
}

std::string render_log_disturbance(const std::vector<LogDisturbance>& d) {
  if (d.empty()) return "";
  std::string out;
  for (NcclLog level : {NcclLog::light, NcclLog::full}) {
    std::string lines;
    for (const auto& x : d)
      if (x.level == level) lines += pair_line(x);
    if (lines.empty()) continue;
    out += fmt::format(
        "the NCCL log's own cost, {} against off (each phase its slowest rank per trial, the Hodges-Lehmann "
        "estimate [its interval], n off/{}):\n{}",
        name_of(level), name_of(level), lines);
  }
  return out;
}

}  // namespace coldstart::analysis
