// Fixes ranked by what they save on the job's critical path (ready), on this node, with this start-up work: for each
// group of configurations that differ only in --fix, the baseline (fix none) against every fix measured beside it,
// with what each costs (measured: memory, bandwidth; stated: what it gives up).
#pragma once
#include <string>
#include <vector>

#include "model/result.h"

namespace coldstart::doctor {

struct FixOutcome {
  Fix fix;
  std::string label;    // the configuration's
  Stats ready;          // cold start over trials
  Stats after_meeting;  // its part after the ranks met (TrialResult::after_meeting_ms), where the run has it
  // What it saved against the baseline (medians; negative: slower): on after_meeting where every trial of the scope
  // has it (the part before is the same for every fix and only adds noise; FixRanking::on_after_meeting), else on
  // ready.
  double saved_ms = 0;
  double saved_pct = 0;        // of the baseline's ready
  double hidden_pct = 0;       // saved_ms as a share of the baseline's connection cost (see below)
  double join_ms = 0;          // prewarm: median wait for the warm-up after the start-up ended
  double mem_delta_bytes = 0;  // NCCL memory after the first collective, against the baseline's
  double busbw_gbps = 0;       // steady-state bus bandwidth (0: not measured)
  double busbw_delta_pct = 0;  // against the baseline's
  std::string cost;            // the fix's stated cost
  std::string limit;           // prewarm: why it hid no more, when the run shows why (empty otherwise)
};

struct FixRanking {
  std::string scope;  // the configurations' common label ("isolated · startup=cpu:300ms")
  Stats baseline_ready;
  // What the cold start costs in the baseline beyond the job's own work: NCCL level, the first collective (enqueue +
  // wait); torch level, init_process_group and the first barrier. hidden_pct is a share of this.
  double baseline_cost_ms = 0;
  double startup_ms = 0;          // the baseline's start-up work, median
  bool on_after_meeting = false;  // saved_ms is measured after the ranks met (see FixOutcome)
  Stats baseline_after_meeting;
  std::vector<FixOutcome> fixes;  // best (most saved) first; excludes the baseline
};

std::vector<FixRanking> rank_fixes(const BenchResults& r);

// "prewarm saves 170 ms (18% of ready 930 ms), hiding 91% of the first collective; ..." — lines for the terminal,
// doctor and the report.
std::string render_fix_rankings(const std::vector<FixRanking>& rankings);

}  // namespace coldstart::doctor
