#include "doctor/fixes.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "model/phases.h"
#include "model/summary.h"
#include "util/strings.h"

namespace coldstart::doctor {
namespace {

double median_of(const ConfigSummary& s, std::string_view phase) {
  const Stats* st = s.phase(std::string(phase));
  return st ? st->median : 0;
}

double connection_cost_ms(const ConfigSummary& s, Worker worker) {
  if (worker == Worker::torch)
    return median_of(s, phase::init_process_group) + median_of(s, phase::barrier_enqueue) +
           median_of(s, phase::barrier_wait);
  return median_of(s, phase::first_enqueue) + median_of(s, phase::first_wait);
}

// Why prewarm hid no more than it did, where the run shows it: the start-up ended before the warm-up (the rest was
// waited for), or large copies from pageable memory held the driver that the warm-up's calls wait for (docs/fixes.md).
std::string prewarm_limit(const FixOutcome& o, const FixRanking& k, const Startup& startup) {
  // Large pageable copies first: they also make the warm-up outlast the start-up, for a reason the user can change.
  if (startup.kind == Startup::Kind::h2d && startup.piece > (uint64_t{64} << 20) && o.hidden_pct < 75)
    return fmt::format(
        "the start-up copies pageable memory {} at a time: each copy holds the GPU driver and the warm-up waits "
        "behind it; copy in small pieces (--startup h2d:SIZE/16MiB measures it) or from pinned memory",
        format_bytes(static_cast<double>(startup.piece)));
  if (o.join_ms > 0.05 * std::max(k.baseline_cost_ms, 1.0))
    return fmt::format(
        "the start-up work ({} ms) ended before the warm-up: {} ms were still waited for in prewarm_join; only "
        "start-up work that exists can hide it",
        format_ms(k.startup_ms), format_ms(o.join_ms));
  return "";
}

// Per configuration, its ok trials' after_meeting_ms; empty when any ok trial lacks it.
Stats after_meeting(const BenchResults& r, int config_id) {
  std::vector<double> v;
  for (const auto& t : r.trials) {
    if (t.config_id != config_id || !t.ok()) continue;
    auto ms = t.after_meeting_ms();
    if (!ms) return {};
    v.push_back(*ms);
  }
  return summarize(v);
}

}  // namespace

std::vector<FixRanking> rank_fixes(const BenchResults& r) {
  // Configurations that differ only in their fix share a scope: the baseline's key.
  std::map<std::string, std::vector<const ConfigSummary*>> scopes;
  std::vector<std::string> order;
  for (const auto& s : r.summaries) {
    Config c = r.configs.at(static_cast<size_t>(s.config_id));
    c.fix = Fix{};
    if (!scopes.count(c.key())) order.push_back(c.key());
    scopes[c.key()].push_back(&s);
  }
  std::vector<FixRanking> out;
  for (const auto& key : order) {
    const auto& members = scopes[key];
    const ConfigSummary* base = nullptr;
    for (const ConfigSummary* s : members)
      if (r.configs.at(static_cast<size_t>(s->config_id)).fix.kind == Fix::Kind::none) base = s;
    if (!base || members.size() < 2 || !base->ready.n) continue;
    FixRanking ranking;
    ranking.scope = config_label(r.configs.at(static_cast<size_t>(base->config_id)), r.context.nccl);
    ranking.baseline_ready = base->ready;
    ranking.baseline_cost_ms = connection_cost_ms(*base, r.spec.worker);
    ranking.startup_ms = median_of(*base, phase::startup);
    const Startup& startup = r.configs.at(static_cast<size_t>(base->config_id)).startup;
    std::map<int, Stats> met;
    ranking.on_after_meeting = true;
    for (const ConfigSummary* s : members) {
      met[s->config_id] = after_meeting(r, s->config_id);
      ranking.on_after_meeting = ranking.on_after_meeting && (met[s->config_id].n > 0 || !s->ready.n);
    }
    ranking.baseline_after_meeting = met[base->config_id];
    for (const ConfigSummary* s : members) {
      const Config& c = r.configs.at(static_cast<size_t>(s->config_id));
      if (s == base || !s->ready.n) continue;
      FixOutcome o;
      o.fix = c.fix;
      o.label = s->label;
      o.ready = s->ready;
      o.after_meeting = met[s->config_id];
      o.saved_ms = ranking.on_after_meeting ? met[base->config_id].median - o.after_meeting.median
                                            : base->ready.median - s->ready.median;
      o.saved_pct = 100 * o.saved_ms / base->ready.median;
      o.hidden_pct = ranking.baseline_cost_ms > 0 ? 100 * o.saved_ms / ranking.baseline_cost_ms : 0;
      o.join_ms = median_of(*s, phase::prewarm_join);
      if (s->nccl_mem_first.n && base->nccl_mem_first.n)
        o.mem_delta_bytes = s->nccl_mem_first.median - base->nccl_mem_first.median;
      if (s->busbw_gbps.n) o.busbw_gbps = s->busbw_gbps.median;
      if (s->busbw_gbps.n && base->busbw_gbps.n && base->busbw_gbps.median > 0)
        o.busbw_delta_pct = 100 * (s->busbw_gbps.median - base->busbw_gbps.median) / base->busbw_gbps.median;
      o.cost = std::string(c.fix.cost());
      if (o.fix.kind == Fix::Kind::prewarm) o.limit = prewarm_limit(o, ranking, startup);
      ranking.fixes.push_back(std::move(o));
    }
    std::sort(ranking.fixes.begin(), ranking.fixes.end(),
              [](const FixOutcome& a, const FixOutcome& b) { return a.saved_ms > b.saved_ms; });
    out.push_back(std::move(ranking));
  }
  return out;
}

std::string render_fix_rankings(const std::vector<FixRanking>& rankings) {
  std::string out;
  for (const auto& k : rankings) {
    out += fmt::format(
        "fixes for {}: baseline ready {} ms{} (its connection cost {} ms{}), ranked by what they save{}:\n", k.scope,
        format_ms(k.baseline_ready.median),
        k.on_after_meeting ? fmt::format(", {} ms after the ranks met", format_ms(k.baseline_after_meeting.median))
                           : "",
        format_ms(k.baseline_cost_ms),
        k.startup_ms > 0 ? fmt::format(", start-up work {} ms", format_ms(k.startup_ms)) : "",
        k.on_after_meeting ? " after the ranks met (the part before, process start to CUDA context, is the "
                             "same for every fix and varies between trials)"
                           : "");
    int n = 0;
    for (const auto& f : k.fixes) {
      out += fmt::format(
          "  {}. {:<14} ready {} ms{}: {} {} ms ({:+.0f}% of ready; {:.0f}% of the connection cost)", ++n, f.fix.name(),
          format_ms(f.ready.median),
          k.on_after_meeting ? fmt::format(" ({} ms after the ranks met)", format_ms(f.after_meeting.median)) : "",
          f.saved_ms >= 0 ? "saves" : "loses", format_ms(std::abs(f.saved_ms)), -f.saved_pct, f.hidden_pct);
      if (f.mem_delta_bytes != 0)
        out += fmt::format("; NCCL memory {}{}", f.mem_delta_bytes > 0 ? "+" : "-",
                           format_bytes(std::abs(f.mem_delta_bytes)));
      if (f.busbw_gbps > 0)
        out += fmt::format("; busbw {} GB/s ({:+.0f}%)", format_ms(f.busbw_gbps), f.busbw_delta_pct);
      out += "\n";
      if (!f.limit.empty()) out += "     " + f.limit + "\n";
      if (!f.cost.empty()) out += "     cost: " + f.cost + "\n";
    }
  }
  return out;
}

}  // namespace coldstart::doctor
