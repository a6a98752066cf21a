// bench's progress on a terminal: a line per finished trial, and while a trial runs (on a terminal) a live line with
// the phase each rank is in.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "lab/observer.h"

namespace coldstart::cli {

class TerminalProgress : public BenchObserver {
 public:
  TerminalProgress(std::ostream& out, bool live) : out_(out), live_(live) {}
  void note(std::string_view line) override;
  void trial_started(const TrialStart& t) override;
  void rank_phase(int rank, std::string_view phase) override;
  void trial_finished(const TrialStart& t, const TrialResult& result) override;

 private:
  std::string head(const TrialStart& t) const;
  std::ostream& out_;
  bool live_;
  std::string current_;
  std::vector<std::string> rank_phase_;
  int64_t last_draw_ns_ = 0;
};

// The finished trial in a few words: "ok  wall 1.32 s  ready 930 ms  comm_init 469 ms  first_enqueue 196 ms".
std::string trial_line(const TrialResult& t);

}  // namespace coldstart::cli
