// Runs one trial: starts every rank, serves the coordinator, and stops the trial when all ranks have ended, when one
// fails (after a short grace for the others to report), at the timeout (the watchdog), or on Ctrl-C. Every rank's
// process group is killed and reaped before it returns: nothing outlives a trial.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "coord/server.h"
#include "model/vocab.h"
#include "util/proc.h"
#include "util/process.h"

namespace coldstart::launch {

struct TrialLaunch {
  int64_t trial_id = 0;
  std::vector<SpawnSpec> ranks;  // rank r is ranks[r]
  double timeout_s = 120;
  double failure_grace_s = 2;  // after a rank fails, the others get this long before they are stopped
};

struct RankExit {
  pid_t pid = 0;
  int64_t spawned_ns = 0;            // CLOCK_MONOTONIC when fork returned
  int64_t reaped_ns = 0;             // when the lab saw it end (polled every few ms), or stopped it
  bool ended = false;                // ended by itself
  bool stopped = false;              // stopped by the lab (at a hang, an error of another rank, or an interrupt)
  int wait_status = 0;               // valid when ended
  std::string how;                   // "exit 0", "signal 11 (Segmentation fault)", "stopped by the lab", "not started"
  std::vector<ThreadState> threads;  // at the timeout, before it was stopped: what each of its threads was doing
};

struct TrialRun {
  TrialStatus status = TrialStatus::ok;
  int64_t t0_ns = 0;     // CLOCK_MONOTONIC when the first rank was started
  int64_t t_end_ns = 0;  // when the last rank was reaped
  std::vector<RankExit> exits;
  std::string message;  // for hang/error: what happened, naming ranks
};

TrialRun run_trial(coord::Server& server, const TrialLaunch& launch);

// SIGINT, SIGTERM, SIGHUP and SIGPIPE set interrupted(): the run stops after the trial in progress and keeps the rest.
void install_interrupt_handlers();
bool interrupted();

}  // namespace coldstart::launch
