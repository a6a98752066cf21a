// `coldstart trace -- COMMAND`: runs any command (torchrun, a Ray driver, srun) with the tracer and NCCL's log
// switched on for it and its children, then merges what every process recorded into a Perfetto trace and a
// per-process cold-start budget.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "model/vocab.h"
#include "trace/merge.h"

namespace coldstart::trace {

struct TraceRequest {
  std::string out_dir;          // created; must not exist
  bool out_is_default = false;  // a default name: made unique (-2, -3, ...) instead of refused
  NcclLog nccl_log = NcclLog::light;
  std::vector<std::string> command;  // command[0] is looked up on PATH
  double grace_s = 5;                // after a forwarded SIGINT/SIGTERM, how long before the command gets SIGKILL
};

struct TraceOutcome {
  std::string dir;      // the output folder, absolute
  int wait_status = 0;  // the command's
  int exit_code = 0;    // what `coldstart trace` should exit with: the command's status, or 128 + signal
  bool killed_after_grace = false;
  std::vector<Budget> budgets;
};

// Throws InputError for a command that cannot be started or an environment where tracing cannot work. SIGINT,
// SIGTERM and SIGHUP sent to coldstart go to the command's process group; what was recorded is merged either way.
// `notes` gets the lines a user needs while it runs (where the files go, how Ray workers inherit the tracer).
TraceOutcome run_traced(const TraceRequest& request, std::ostream& notes);

}  // namespace coldstart::trace
