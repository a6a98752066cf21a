// What the lab tells whoever watches a run (as ninja's build loop reports through its Status): the lab only calls
// these; how they show (a terminal line, nothing, a test's record) is the watcher's. The terminal's implementation
// lives with the commands (cli/progress.h).
#pragma once
#include <string>
#include <string_view>

#include "model/result.h"

namespace coldstart::lab {

struct TrialStart {
  int index = 0;      // position in the run
  int planned = 0;    // trials in the run
  std::string label;  // the configuration, NCCL libraries named by version
  int repeat = 0;     // its repeat within the configuration
  int nranks = 0;
};

class BenchObserver {
 public:
  virtual ~BenchObserver() = default;
  virtual void note(std::string_view line) { (void)line; }  // e.g. "starting a local Ray instance with 2 GPU(s)"
  virtual void trial_started(const TrialStart& t) { (void)t; }
  virtual void rank_phase(int rank, std::string_view phase) { (void)rank, (void)phase; }  // as events stream in
  virtual void trial_finished(const TrialStart& t, const TrialResult& result) { (void)t, (void)result; }
};

}  // namespace coldstart::lab
