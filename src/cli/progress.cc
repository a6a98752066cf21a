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

std::string TerminalProgress::head(const TrialStart& t) const {
  return fmt::format("[{:>{}}/{}] {} #{}", t.index + 1, std::to_string(t.planned).size(), t.planned, t.label, t.repeat);
}

void TerminalProgress::note(std::string_view line) { out_ << line << "\n" << std::flush; }

void TerminalProgress::trial_started(const TrialStart& t) {
  current_ = head(t);
  rank_phase_.assign(static_cast<size_t>(t.nranks), "start");
}

void TerminalProgress::rank_phase(int rank, std::string_view phase) {
  if (!live_ || rank < 0 || static_cast<size_t>(rank) >= rank_phase_.size()) return;
  rank_phase_[static_cast<size_t>(rank)] = phase;
  int64_t now = mono_ns();
  if (now - last_draw_ns_ < 100'000'000) return;  // at most ten redraws a second
  last_draw_ns_ = now;
  out_ << "\r\033[K" << current_ << "  " << join(rank_phase_, " ") << std::flush;
}

void TerminalProgress::trial_finished(const TrialStart& t, const TrialResult& result) {
  if (live_) out_ << "\r\033[K";
  out_ << head(t) << ": " << trial_line(result) << "\n" << std::flush;
}

}  // namespace coldstart::cli
