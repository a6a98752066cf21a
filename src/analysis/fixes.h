// The fix ranking, analysis shared by bench, doctor --from and the HTML report (none of them owns it). Fixes ranked by
// what they save on the job's critical path (ready), on this node, with this start-up work: for each group of
// configurations that differ only in fixes (--fix, cuMem off, the patched NCCL beside its stock release: Ranked
// below), the baseline (none of them) against every fix or mix of fixes measured beside it, each on the
// window of the critical path it can act on, with an interval and n, and with what each costs (measured: memory,
// bandwidth; stated: what it gives up). docs/fixes.md says why these windows and these estimates.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "model/result.h"
#include "util/stats.h"

namespace coldstart::analysis {

// The part of the critical path a fix is measured on, per trial (docs/fixes.md):
enum class Window {
  // prewarm: from the end of the communicator's init on the main thread (comm_init) to the last rank's first
  // collective done; at the torch level, where the warm-up makes the process group itself, from the meeting.
  after_init,
  // fixes that move cost into init (cumem-off, eager-connect, channels:N) or act on init and the first collective
  // alike (socket-poll, patched-nccl): from the last rank leaving the barrier before init (sync_init) to the last
  // rank's first collective done (TrialResult::after_meeting_ms).
  after_meeting,
  groups,  // split-share: from the last rank starting groups_init to the last rank ending groups_first
  ready,   // a run without the phases the windows need: the whole cold start
};
std::string_view window_name(Window w);

struct FixOutcome {
  Fix fix;                   // the change, or the first of several taken together
  std::vector<Fix> with;     // the others taken with it (patched-nccl with cumem-off: the patched NCCL, cuMem off)
  std::string name() const;  // "cumem-off", "patched-nccl+cumem-off"
  // Where the ranking has two fixes of one name (two patched builds beside one stock release): what tells this one
  // apart, its NCCL as the labels name it (" · NCCL 2.30.7+peer-regions+fd-reserve (next)"); "" otherwise.
  std::string apart;
  std::string shown() const { return name() + apart; }  // what the ranking, the verdict and the report print
  std::string label;                                    // the configuration's
  int config_id = -1;                                   // and its id in the run
  Stats ready;                                          // cold start over ok trials
  Window window = Window::ready;
  Stats measured;  // the window over its ok trials
  // What it saves against the baseline on that window (baseline - fix; negative: slower): the Hodges-Lehmann
  // estimate, its 95% interval (or the widest there is with too few trials) and n a side.
  Shift saved;
  double saved_ms = 0;    // saved.estimate
  double saved_pct = 0;   // of the baseline's ready
  double hidden_pct = 0;  // saved_ms as a share of the baseline's cost on the window (see below)
  double hidden_low_pct = 0, hidden_high_pct = 0;  // the interval's ends as shares of it
  int trials = 0, failed = 0;                      // its trials, and those not ok (hang, error, interrupted)
  std::string failures;                            // "4 hang, 1 error"
  double join_ms = 0;                              // prewarm: median wait for the warm-up after the start-up ended
  double mem_delta_bytes = 0;                      // NCCL memory after the first collective, against the baseline's
  double busbw_gbps = 0;                           // steady-state bus bandwidth (0: not measured)
  double busbw_delta_pct = 0;                      // against the baseline's
  std::string cost;                                // the fix's stated cost
  std::string cost_in_brief;                       // the same in a few words (the verdict's)
  std::string limit;   // prewarm: why it hid no more, when it clearly hid less than the cost and the run shows why
  std::string beyond;  // a hidden share whose interval lies above 100%: what in the data made up the rest
  bool is_failed() const { return failed > 0; }
  bool saves() const { return !is_failed() && saved.n_a > 0 && saved.low > 0; }  // interval above zero
  bool tie() const { return !is_failed() && saved.spans_zero(); }                // no difference measured
};

struct FixRanking {
  std::string scope;  // the configurations' common label ("isolated · startup=cpu:300ms")
  Stats baseline_ready;
  int baseline_trials = 0, baseline_failed = 0;
  // What the cold start costs in the baseline beyond the job's own work: NCCL level, the first collective (enqueue +
  // wait); torch level, init_process_group and the first barrier. hidden_pct is a share of this (split-share: of
  // the baseline's groups window).
  double baseline_cost_ms = 0;
  double baseline_groups_ms = 0;
  double startup_ms = 0;  // the baseline's start-up work, median
  // Fixes with failed trials first (never best), then by what they save, most first.
  std::vector<FixOutcome> fixes;
  // The fixes that save (interval above zero) and that no other saver beats measurably (their windows after the
  // ranks met compared): one is the best fix; several save alike; none: no fix measured shortens it.
  std::vector<size_t> leaders;
};

// A configuration as the ranking sees it: a default configuration of the run and the changes that make it this one,
// in this order. patched-nccl: a patched NCCL (a library whose version names its patches, "2.30.7+peer-regions")
// where the run has the stock build of that release too (it becomes the stock one), else the patch's switch on where
// the run also has it off (NCCL_P2P_PEER_REGION=0); cumem-off: NCCL_CUMEM_ENABLE=0 where the run also has it unset or
// on; then the configuration's --fix. What a change sets in the environment is not part of the default.
struct Ranked {
  Config base;
  std::vector<Fix> changes;
};
Ranked as_ranked(const Config& c, const BenchResults& r);

// Per default configuration (each of the run's that no change makes: the stock NCCL, cuMem as NCCL has it, no
// --fix), every configuration that is it with changes, against it.
std::vector<FixRanking> rank_fixes(const BenchResults& r);

// "saves 176 ms [170, 182] after init (n 5/5)" and the like, shared by the three outputs.
std::string format_saving(const FixOutcome& f);
// "hides 97% [93%, 100%] of the connection cost"
std::string format_hidden(const FixOutcome& f);

// Lines for the terminal, doctor and the report: per scope, failed fixes first, then each with what it saves, its
// interval and n, why it hid no more or what made up more than all, and its cost (render_fix_details); then the
// verdict of each (analysis/verdict.h). doctor --from's fixes-ranked finding is these lines; bench prints the two
// parts apart, its verdict last.
std::string render_fix_rankings(const std::vector<FixRanking>& rankings);
std::string render_fix_details(const std::vector<FixRanking>& rankings);

}  // namespace coldstart::analysis
