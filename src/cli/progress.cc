#include "cli/progress.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/phases.h"
#include "util/clock.h"
#include "util/strings.h"

namespace coldstart::cli {

std::string trial_line(const TrialResult& t) {
  std::string s(name_of(t.status));
  double init = 0, first = 0;
  for (const auto& r : t.ranks) {
    if (auto* p = r.phase(std::string(phase::comm_init))) init = std::max(init, p->dur_ms);
    if (auto* p = r.phase(std::string(phase::init_process_group))) init = std::max(init, p->dur_ms);
    if (auto* p = r.phase(std::string(phase::first_enqueue))) first = std::max(first, p->dur_ms);
  }
  s += t.wall_ms >= 1000 ? fmt::format("  wall {:.2f} s", t.wall_ms / 1e3) : fmt::format("  wall {:.0f} ms", t.wall_ms);
  if (auto ready = t.ready_ms()) s += fmt::format("  ready {} ms", format_ms(*ready));
  if (init > 0) s += fmt::format("  init {} ms  first_enqueue {} ms", format_ms(init), format_ms(first));
  if (!t.message.empty()) s += "  — " + t.message;
  return s;
}

std::string TerminalProgress::head(const lab::TrialStart& t) const {
  return fmt::format("[{:>{}}/{}] {} #{}", t.index + 1, std::to_string(t.planned).size(), t.planned, t.label, t.repeat);
}

void TerminalProgress::note(std::string_view line) { out_ << line << "\n" << std::flush; }

void TerminalProgress::trial_started(const lab::TrialStart& t) {
  current_ = head(t);
  rank_phase_.assign(static_cast<size_t>(t.nranks), "start");
  trial_start_ns_ = mono_ns();
  last_draw_ns_ = live_ ? 0 : trial_start_ns_;  // a terminal sees the first event at once, a file after 10 s
}

std::string ranks_by_phase(const std::vector<std::string>& phases) {
  if (phases.size() <= kRanksShownOneByOne) return join(phases, " ");
  std::vector<std::pair<std::string, int>> counts;  // in the order the phases were first met
  for (const std::string& p : phases) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == p; });
    if (it == counts.end())
      counts.emplace_back(p, 1);
    else
      ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [phase, n] : counts) parts.push_back(fmt::format("{} {}", n, phase));
  return fmt::format("{} ranks: {}", phases.size(), join(parts, " · "));
}

void TerminalProgress::rank_phase(int rank, std::string_view phase) {
  if (rank < 0 || static_cast<size_t>(rank) >= rank_phase_.size()) return;
  rank_phase_[static_cast<size_t>(rank)] = phase;
  int64_t now = mono_ns();
  if (live_) {
    if (now - last_draw_ns_ < 100'000'000) return;  // at most ten redraws a second
    last_draw_ns_ = now;
    out_ << "\r\033[K" << current_ << "  " << ranks_by_phase(rank_phase_) << std::flush;
  } else if (now - trial_start_ns_ >= kQuietProgressNs && now - last_draw_ns_ >= kQuietProgressNs) {
    // Into a file or a pipe (a job's log): a line now and then while a long trial runs, not a redraw per event.
    last_draw_ns_ = now;
    out_ << current_ << ": " << ranks_by_phase(rank_phase_) << "\n" << std::flush;
  }
}

void TerminalProgress::trial_finished(const lab::TrialStart& t, const TrialResult& result) {
  if (live_) out_ << "\r\033[K";
  out_ << head(t) << ": " << trial_line(result) << "\n" << std::flush;
}

}  // namespace coldstart::cli
