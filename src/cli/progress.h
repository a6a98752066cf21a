// bench's progress: a line per finished trial, and while a trial runs the phase each rank is in — on a terminal a live
// line, redrawn; into a file or a pipe a line every 10 s of a long trial. Past 8 ranks the ranks are counted by phase
// ("64 ranks: 20 comm_init · 44 first_wait") instead of listed.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "lab/observer.h"

namespace coldstart::cli {

class TerminalProgress : public lab::BenchObserver {
 public:
  TerminalProgress(std::ostream& out, bool live) : out_(out), live_(live) {}
  void note(std::string_view line) override;
  void trial_started(const lab::TrialStart& t) override;
  void rank_phase(int rank, std::string_view phase) override;
  void trial_finished(const lab::TrialStart& t, const TrialResult& result) override;

 private:
  std::string head(const lab::TrialStart& t) const;
  std::ostream& out_;
  bool live_;
  std::string current_;
  std::vector<std::string> rank_phase_;
  int64_t trial_start_ns_ = 0, last_draw_ns_ = 0;
};

inline constexpr size_t kRanksShownOneByOne = 8;
inline constexpr int64_t kQuietProgressNs = 10'000'000'000;
// Each rank's phase, in rank order, or past kRanksShownOneByOne ranks how many are in each ("64 ranks: 20 comm_init ·
// 44 first_wait", phases in the order first met).
std::string ranks_by_phase(const std::vector<std::string>& phases);

// The finished trial in a few words: "ok  wall 1.32 s  ready 930 ms  comm_init 469 ms  first_enqueue 196 ms".
std::string trial_line(const TrialResult& t);

}  // namespace coldstart::cli
