#include "analysis/fixes.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "analysis/verdict.h"
#include "model/phases.h"
#include "model/summary.h"
#include "util/strings.h"

namespace coldstart::analysis {
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

double end_of(const PhaseRecord& p) { return p.start_ms + p.dur_ms; }

// A trial's window (see Window), nullopt when a rank lacks a phase it needs.
std::optional<double> window_ms(const TrialResult& t, Window w) {
  if (w == Window::ready) return t.ready_ms();
  if (w == Window::after_meeting) return t.after_meeting_ms();
  if (t.ranks.empty()) return std::nullopt;
  double from = 0, to = 0;
  for (const auto& r : t.ranks) {
    const PhaseRecord *start = nullptr, *done = nullptr;
    if (w == Window::after_init) {
      start = r.phase(std::string(phase::comm_init));
      if (!start) start = r.phase(std::string(phase::sync_init));
      done = r.ready_phase();
      if (!start || !done) return std::nullopt;
      from = std::max(from, end_of(*start));
    } else {
      start = r.phase(std::string(phase::groups_init));
      done = r.phase(std::string(phase::groups_first));
      if (!start || !done) return std::nullopt;
      from = std::max(from, start->start_ms);
    }
    to = std::max(to, end_of(*done));
  }
  return to - from;
}

// The connection phases of a trial, longest over its ranks (what hidden_pct is a share of).
double trial_connection_ms(const TrialResult& t, Worker worker) {
  double most = 0;
  for (const auto& r : t.ranks) {
    double sum = 0;
    for (std::string_view p :
         worker == Worker::torch
             ? std::vector<std::string_view>{phase::init_process_group, phase::barrier_enqueue, phase::barrier_wait}
             : std::vector<std::string_view>{phase::first_enqueue, phase::first_wait})
      if (const PhaseRecord* rec = r.phase(std::string(p))) sum += rec->dur_ms;
    most = std::max(most, sum);
  }
  return most;
}

Window window_for(const Fix& f) {
  switch (f.kind) {
    case Fix::Kind::prewarm: return Window::after_init;
    case Fix::Kind::split_share: return Window::groups;
    default: return Window::after_meeting;
  }
}

// Changes taken together act where each acts: their common window, else the one every fix's effect lies in.
Window window_for(const std::vector<Fix>& changes) {
  Window w = window_for(changes.front());
  for (const Fix& f : changes)
    if (window_for(f) != w) return Window::after_meeting;
  return w;
}

// The fix's own variables are in a configuration's env (what its ranks ran with), as model/spec.cc's labels know.
bool set_by_fix_of(const Fix& fix, const EnvSetting& e) {
  for (const auto& f : fix.env())
    if (f.key == e.key) return true;
  return false;
}

// Per ok trial of a configuration, its window; empty when any ok trial lacks it.
std::vector<double> windows(const BenchResults& r, int config_id, Window w) {
  std::vector<double> v;
  for (const auto& t : r.trials) {
    if (t.config_id != config_id || !t.ok()) continue;
    auto ms = window_ms(t, w);
    if (!ms) return {};
    v.push_back(*ms);
  }
  return v;
}

// Per ok trial, its window less its connection phases: the start-up work and the waits in it.
std::vector<double> rest_of_window(const BenchResults& r, int config_id, Window w) {
  std::vector<double> v;
  for (const auto& t : r.trials)
    if (t.config_id == config_id && t.ok())
      if (auto ms = window_ms(t, w)) v.push_back(*ms - trial_connection_ms(t, r.spec.worker));
  return v;
}

// Why prewarm hid no more than it did, where it clearly hid less than the cost and the run shows why: large copies
// from pageable memory held the driver that the warm-up's calls wait for, or the start-up ended before the warm-up
// (docs/fixes.md). The warm-up's own length says which: it stretched beyond the baseline's connection cost.
std::string prewarm_limit(const FixOutcome& o, const FixRanking& k, const Startup& startup, double warmup_ms) {
  if (o.hidden_high_pct >= 100 || o.saved.n_a == 0) return "";  // not clearly less than all of it
  const bool stretched = warmup_ms > 1.2 * k.baseline_cost_ms;
  if (startup.kind == Startup::Kind::h2d && startup.piece > (uint64_t{64} << 20) && stretched)
    return fmt::format(
        "the start-up copies pageable memory {} at a time, one copy after another: each copy holds the GPU driver "
        "and the warm-up waits behind it (it took {} ms against the baseline's connection cost of {} ms); copy in "
        "small pieces (--startup h2d:SIZE/16MiB measures it) or from pinned memory. A loader that builds each "
        "tensor on the CPU between its copies leaves the driver free in between and is not held back this way",
        format_bytes(static_cast<double>(startup.piece)), format_ms(warmup_ms), format_ms(k.baseline_cost_ms));
  if (o.join_ms > 0.05 * std::max(k.baseline_cost_ms, 1.0))
    return fmt::format(
        "the start-up work ({} ms) ended before the warm-up ({} ms): {} ms were still waited for in prewarm_join; "
        "only start-up work that exists can hide it",
        format_ms(k.startup_ms), format_ms(warmup_ms), format_ms(o.join_ms));
  return "";
}

// The value the run gives `key` in a configuration other than `value` (the first found), where it has one.
std::optional<std::optional<std::string>> other_value(
    const BenchResults& r, const std::string& key, const std::function<bool(const std::optional<std::string>&)>& ok) {
  for (const auto& c : r.configs)
    for (const auto& e : c.env)
      if (e.key == key && ok(e.value) && !set_by_fix_of(c.fix, e)) return e.value;
  return std::nullopt;
}

EnvSetting* env_entry(Config& c, const std::string& key) {
  for (auto& e : c.env)
    if (e.key == key && !set_by_fix_of(c.fix, e)) return &e;
  return nullptr;
}

// patched-nccl: a patched library (a version with '+') where the run also has the stock build of that release, which
// becomes the configuration's library; else, with a patched library, its switch on (NCCL_P2P_PEER_REGION unset or 1)
// where the run also has it off, which becomes the configuration's.
bool take_patched(Config& c, const BenchResults& r) {
  const NcclLibInfo* lib = nccl_lib_of(r.context.nccl, c.nccl_lib);
  const size_t plus = lib ? lib->version.find('+') : std::string::npos;
  if (plus == std::string::npos) return false;
  for (const auto& stock : r.context.nccl)
    if (stock.version == lib->version.substr(0, plus) && !stock.requested.empty()) {
      c.nccl_lib = stock.requested;
      return true;
    }
  EnvSetting* e = env_entry(c, "NCCL_P2P_PEER_REGION");
  if (!e || e->value == "0") return false;
  if (!other_value(r, e->key, [](const auto& v) { return v == "0"; })) return false;
  e->value = "0";
  return true;
}

// cumem-off: NCCL_CUMEM_ENABLE=0 where the run also has it unset (or on), which becomes the configuration's.
bool take_cumem_off(Config& c, const BenchResults& r) {
  EnvSetting* e = env_entry(c, "NCCL_CUMEM_ENABLE");
  if (!e || e->value != "0") return false;
  auto on = other_value(r, e->key, [](const auto& v) { return v != "0"; });
  if (!on) return false;
  e->value = *on;
  return true;
}

}  // namespace

Ranked as_ranked(const Config& c, const BenchResults& r) {
  Ranked out{c, {}};
  if (take_patched(out.base, r)) out.changes.push_back(Fix{Fix::Kind::patched_nccl, 0});
  if (take_cumem_off(out.base, r)) out.changes.push_back(Fix{Fix::Kind::cumem_off, 0});
  if (c.fix.kind != Fix::Kind::none) {
    std::erase_if(out.base.env, [&](const EnvSetting& e) { return set_by_fix_of(c.fix, e); });
    out.base.fix = Fix{};
    out.changes.push_back(c.fix);
  }
  return out;
}

namespace {

std::string failures_of(const ConfigSummary& s) {
  std::vector<std::string> parts;
  for (const auto& [status, n] : s.status_counts)
    if (status != "ok") parts.push_back(fmt::format("{} {}", n, status));
  return join(parts, ", ");
}

}  // namespace

std::string_view window_name(Window w) {
  switch (w) {
    case Window::after_init: return "after init";
    case Window::after_meeting: return "after the ranks met";
    case Window::groups: return "on the groups";
    case Window::ready: return "on ready";
  }
  return "";
}

namespace {

// Configurations that differ only in their fix share a scope (the baseline's key), in the order they first appear.
struct Scopes {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ConfigSummary*>> members;
  std::map<int, Ranked> ranked;  // by config id
};

Scopes scopes_of(const BenchResults& r) {
  Scopes out;
  for (const auto& s : r.summaries) {
    Ranked c = as_ranked(r.configs.at(static_cast<size_t>(s.config_id)), r);
    const std::string key = c.base.key();
    out.ranked[s.config_id] = std::move(c);
    if (!out.members.count(key)) out.order.push_back(key);
    out.members[key].push_back(&s);
  }
  return out;
}

// One fix against its scope's baseline: what it saved on its window (where both sides have it in every ok trial,
// else the next wider one that they have), and of the connection cost. Sets the ranking's groups cost when that is
// its window.
FixOutcome outcome_of(const BenchResults& r, const ConfigSummary& s, const Ranked& c, const ConfigSummary& base,
                      FixRanking& ranking) {
  FixOutcome o;
  o.fix = c.changes.front();
  o.with.assign(c.changes.begin() + 1, c.changes.end());
  o.label = s.label;
  o.config_id = s.config_id;
  o.ready = s.ready;
  o.trials = s.total();
  o.failed = s.total() - s.ok();
  o.failures = failures_of(s);
  std::vector<std::string> costs, brief;
  for (const Fix& f : c.changes) {
    costs.emplace_back(f.cost());
    brief.emplace_back(f.cost_in_brief());
  }
  o.cost = join(costs, "; ");
  o.cost_in_brief = join(brief, "; ");
  o.window = window_for(c.changes);
  std::vector<double> mine, theirs;
  for (Window w : {o.window, Window::after_meeting, Window::ready}) {
    mine = windows(r, s.config_id, w);
    theirs = windows(r, base.config_id, w);
    o.window = w;
    if (!mine.empty() && !theirs.empty()) break;
  }
  o.measured = summarize(mine);
  if (!mine.empty() && !theirs.empty()) {
    o.saved = hodges_lehmann(mine, theirs);  // baseline - fix
    o.saved_ms = o.saved.estimate;
  }
  o.saved_pct = 100 * o.saved_ms / base.ready.median;
  double cost = ranking.baseline_cost_ms;
  if (o.window == Window::groups) cost = ranking.baseline_groups_ms = summarize(theirs).median;
  if (cost > 0) {
    o.hidden_pct = 100 * o.saved_ms / cost;
    o.hidden_low_pct = 100 * o.saved.low / cost;
    o.hidden_high_pct = 100 * o.saved.high / cost;
  }
  o.join_ms = median_of(s, phase::prewarm_join);
  if (s.nccl_mem_first.n && base.nccl_mem_first.n)
    o.mem_delta_bytes = s.nccl_mem_first.median - base.nccl_mem_first.median;
  if (s.busbw_gbps.n) o.busbw_gbps = s.busbw_gbps.median;
  if (s.busbw_gbps.n && base.busbw_gbps.n && base.busbw_gbps.median > 0)
    o.busbw_delta_pct = 100 * (s.busbw_gbps.median - base.busbw_gbps.median) / base.busbw_gbps.median;
  if (o.fix.kind == Fix::Kind::prewarm && o.with.empty() && !o.is_failed())
    o.limit = prewarm_limit(o, ranking, r.configs.at(static_cast<size_t>(base.config_id)).startup,
                            median_of(s, phase::prewarm));
  // More than all of the cost, beyond noise: the rest of the window (start-up work, waits) was shorter in its
  // trials than in the baseline's, which no fix does on purpose; say by how much.
  if (!o.is_failed() && o.hidden_low_pct > 100 && o.window != Window::groups) {
    const Stats mine_rest = summarize(rest_of_window(r, s.config_id, o.window));
    const Stats base_rest = summarize(rest_of_window(r, base.config_id, o.window));
    o.beyond = fmt::format(
        "more than the connection cost: the rest of the window (start-up work and waits) took {} ms in its "
        "trials against {} ms in the baseline's",
        format_ms(mine_rest.median), format_ms(base_rest.median));
  }
  return o;
}

// The leaders: savers that no other saver beats beyond noise, on the window after the ranks met (the one every
// fix's effect lies in).
std::vector<size_t> leaders_of(const BenchResults& r, const std::vector<FixOutcome>& fixes) {
  std::vector<size_t> savers, leaders;
  std::vector<std::vector<double>> met, ready;  // each saver's windows, read once
  for (size_t i = 0; i < fixes.size(); ++i)
    if (fixes[i].saves()) {
      savers.push_back(i);
      met.push_back(windows(r, fixes[i].config_id, Window::after_meeting));
      ready.push_back(windows(r, fixes[i].config_id, Window::ready));
    }
  for (size_t x = 0; x < savers.size(); ++x) {
    bool beaten = false;
    for (size_t y = 0; y < savers.size(); ++y) {
      if (x == y) continue;
      const bool both_met = !met[x].empty() && !met[y].empty();
      const auto& a = both_met ? met[x] : ready[x];
      const auto& b = both_met ? met[y] : ready[y];
      if (hodges_lehmann(b, a).low > 0) beaten = true;  // x's window minus y's, wholly above zero
    }
    if (!beaten) leaders.push_back(savers[x]);
  }
  return leaders;
}

// Fixes of one name in one ranking come from configurations that differ in their library alone (the patched fix maps
// each patched build to the same stock one): each is told apart by its NCCL.
void tell_fixes_apart(std::vector<FixOutcome>& fixes, const BenchResults& r) {
  for (auto& f : fixes) {
    const auto same =
        std::count_if(fixes.begin(), fixes.end(), [&](const FixOutcome& g) { return g.name() == f.name(); });
    const NcclLibInfo* lib = nccl_lib_of(r.context.nccl, r.configs.at(static_cast<size_t>(f.config_id)).nccl_lib);
    if (same > 1 && lib && !lib->version.empty()) f.apart = " · NCCL " + lib->version;
  }
}

}  // namespace

std::vector<FixRanking> rank_fixes(const BenchResults& r) {
  Scopes scopes = scopes_of(r);
  std::vector<FixRanking> out;
  for (const auto& key : scopes.order) {
    const auto& members = scopes.members[key];
    const ConfigSummary* base = nullptr;
    for (const ConfigSummary* s : members)
      if (scopes.ranked.at(s->config_id).changes.empty()) base = s;
    if (!base || members.size() < 2 || !base->ready.n) continue;
    FixRanking ranking;
    ranking.scope = config_label(r.configs.at(static_cast<size_t>(base->config_id)), r.context.nccl);
    ranking.baseline_ready = base->ready;
    ranking.baseline_trials = base->total();
    ranking.baseline_failed = base->total() - base->ok();
    ranking.baseline_cost_ms = connection_cost_ms(*base, r.spec.worker);
    ranking.startup_ms = median_of(*base, phase::startup);
    for (const ConfigSummary* s : members)
      if (s != base) ranking.fixes.push_back(outcome_of(r, *s, scopes.ranked.at(s->config_id), *base, ranking));
    std::stable_sort(ranking.fixes.begin(), ranking.fixes.end(), [](const FixOutcome& a, const FixOutcome& b) {
      if (a.is_failed() != b.is_failed()) return a.is_failed();
      return a.saved_ms > b.saved_ms;
    });
    ranking.leaders = leaders_of(r, ranking.fixes);
    tell_fixes_apart(ranking.fixes, r);
    out.push_back(std::move(ranking));
  }
  return out;
}

std::string FixOutcome::name() const {
  std::string s = fix.name();
  for (const Fix& f : with) s += "+" + f.name();
  return s;
}

std::string format_saving(const FixOutcome& f) {
  if (f.saved.n_a == 0) return "not measured";
  const Shift& s = f.saved;
  const std::string interval =
      fmt::format("{:.0f}% interval {} to {} ms{}, n {}/{}", 100 * s.confidence, format_ms(s.low), format_ms(s.high),
                  s.reached ? "" : ": too few trials for 95%", s.n_b, s.n_a);  // n baseline/fix
  if (f.tie())
    return fmt::format("no difference measured {} ({} ms; {})", window_name(f.window), format_ms(s.estimate), interval);
  return fmt::format("{} {} ms {} ({})", s.estimate >= 0 ? "saves" : "loses", format_ms(std::abs(s.estimate)),
                     window_name(f.window), interval);
}

std::string format_hidden(const FixOutcome& f) {
  return fmt::format("hides {:.0f}% [{:.0f}%, {:.0f}%] of {}", f.hidden_pct, f.hidden_low_pct, f.hidden_high_pct,
                     f.window == Window::groups ? "what the groups cost" : "the connection cost");
}

std::string render_fix_rankings(const std::vector<FixRanking>& rankings) {
  return render_fix_details(rankings) + (rankings.empty() ? "" : render_verdicts(rankings));
}

std::string render_fix_details(const std::vector<FixRanking>& rankings) {
  std::string out;
  for (const auto& k : rankings) {
    out += fmt::format(
        "fixes for {}: baseline ready {} ms (n {}{}; its connection cost {} ms{}); each fix against the baseline on "
        "the part of ready it can act on (docs/fixes.md), the Hodges-Lehmann estimate with its 95% interval, n "
        "baseline/fix:\n",
        k.scope, format_ms(k.baseline_ready.median), k.baseline_ready.n,
        k.baseline_failed ? fmt::format(", {} of {} trials failed", k.baseline_failed, k.baseline_trials) : "",
        format_ms(k.baseline_cost_ms),
        k.startup_ms > 0 ? fmt::format(", start-up work {} ms", format_ms(k.startup_ms)) : "");
    int n = 0;
    for (const auto& f : k.fixes) {
      if (f.is_failed()) {
        out += fmt::format("  FAILED {:<14} {} of {} trials did not finish ({}): not ranked\n", f.shown(), f.failed,
                           f.trials, f.failures);
        continue;
      }
      out += fmt::format("  {}. {:<14} ready {} ms: {}", ++n, f.shown(), format_ms(f.ready.median), format_saving(f));
      if (f.saved.n_a) out += fmt::format("; {:.0f}% of ready; {}", std::abs(f.saved_pct), format_hidden(f));
      if (f.mem_delta_bytes != 0)
        out += fmt::format("; NCCL memory {}{}", f.mem_delta_bytes > 0 ? "+" : "-",
                           format_bytes(std::abs(f.mem_delta_bytes)));
      if (f.busbw_gbps > 0)
        out += fmt::format("; busbw {} GB/s ({:+.0f}%)", format_ms(f.busbw_gbps), f.busbw_delta_pct);
      out += "\n";
      if (!f.limit.empty()) out += "     why it hid no more: " + f.limit + "\n";
      if (!f.beyond.empty()) out += "     it hides " + f.beyond + "\n";
      if (!f.cost.empty()) out += "     cost: " + f.cost + "\n";
    }
    std::vector<std::string> names;
    for (size_t i : k.leaders) names.push_back(k.fixes[i].shown());
    if (k.leaders.size() == 1)
      out += "  best: " + names[0] + "\n";
    else if (k.leaders.size() > 1)
      out += "  no single best: " + join(names, ", ") + " save alike (no difference measured between them)\n";
    else
      out += "  no fix measured shortens it beyond noise\n";
  }
  return out;
}

}  // namespace coldstart::analysis
