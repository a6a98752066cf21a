// What result.h's structs compute from what they hold (cold start, the slowest rank, the part after the meeting, a
// summary's phases and counts), and a rank's report turned into its result (rank_result_from_report, clock_shift_ns).
#include "model/result.h"

#include <algorithm>

#include "model/phases.h"
#include "util/clock.h"

namespace coldstart {

int RankNccl::lazy_connection_count() const {
  int n = 0;
  for (const auto& [k, v] : lazy_connections) n += v;
  return n;
}

const PhaseRecord* RankResult::phase(const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

const PhaseRecord* RankResult::ready_phase() const {
  for (const auto& p : phases)
    if (const PhaseInfo* info = phase_info(p.name); info && info->completes_first) return &p;
  return nullptr;
}

std::optional<double> RankResult::ready_ms() const {
  const PhaseRecord* done = ready_phase();
  if (!done) return std::nullopt;
  double start = done->start_ms;
  for (const auto& p : phases) start = std::min(start, p.start_ms);
  return done->start_ms + done->dur_ms - start;
}

std::optional<double> TrialResult::ready_ms() const {
  int r = slowest_rank();
  return r < 0 ? std::nullopt : ranks[static_cast<size_t>(r)].ready_ms();
}

std::optional<double> TrialResult::after_meeting_ms() const {
  if (ranks.empty()) return std::nullopt;
  double met = 0, done = 0;
  for (const auto& r : ranks) {
    const PhaseRecord* meet = r.phase(std::string(phase::sync_init));
    const PhaseRecord* first = r.ready_phase();
    if (!meet || !first) return std::nullopt;
    met = std::max(met, meet->start_ms + meet->dur_ms);
    done = std::max(done, first->start_ms + first->dur_ms);
  }
  return done - met;
}

int TrialResult::slowest_rank() const {
  int slowest = -1;
  double worst = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    auto ready = ranks[i].ready_ms();
    if (!ready) return -1;
    if (slowest < 0 || *ready > worst) slowest = static_cast<int>(i), worst = *ready;
  }
  return slowest;
}

const Stats* ConfigSummary::phase(const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p.stats;
  return nullptr;
}

int ConfigSummary::ok() const {
  auto it = status_counts.find("ok");
  return it == status_counts.end() ? 0 : it->second;
}

int ConfigSummary::total() const {
  int n = 0;
  for (const auto& [k, v] : status_counts) n += v;
  return n;
}

int64_t clock_shift_ns(const RankReport& report, int64_t clock_offset_ns, int64_t server_real_minus_mono_ns) {
  int64_t real_minus_mono = report.real_anchor_ns - report.mono_anchor_ns;
  return real_minus_mono - clock_offset_ns - server_real_minus_mono_ns;
}

RankResult rank_result_from_report(const RankReport& report, int64_t t0_ns, int64_t shift_ns) {
  RankResult r;
  static_cast<RankFacts&>(r) = report;
  for (const auto& p : report.phases) {
    int64_t s = p.start_ns + shift_ns, e = p.end_ns + shift_ns;
    r.phases.push_back({p.name, ns_to_ms(s - t0_ns), ns_to_ms(e - s)});
  }
  return r;
}

}  // namespace coldstart
