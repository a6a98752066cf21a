// `coldstart worker` under an outside launcher (torchrun, srun, mpirun, PMI, Ray Train): rank 0 hosts the coordinator
// in a thread beside its own worker, and when every rank has reported, appends the trial to DIR/results.jsonl and
// rewrites DIR/results.json from all the trials there, so that launching the job K times gives K trials of one run.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "coord/server.h"
#include "launch/external.h"
#include "model/result.h"
#include "worker/worker.h"

namespace coldstart::lab {

struct ExternalRun {
  launch::ExternalRank who;
  worker::WorkerOptions worker;  // rank, nranks, device, coordinator address and token filled in
  std::string out_dir;           // rank 0 writes here (created if missing; earlier trials are kept)
  std::string bind;              // rank 0's coordinator address
  bool masked = false;           // --mask: each rank was given only its own GPU
  double timeout_s = 600;
  std::vector<std::string> argv;  // recorded in the results
};

// Runs this rank; rank 0 also serves the coordinator and writes the results. Returns the exit status.
int run_external(const ExternalRun& run, int64_t main_entry_ns);

// The trial rank 0 writes, from what every rank sent (exposed for tests).
nlohmann::json external_trial_line(const ExternalRun& run, const coord::Server& server,
                                   int64_t server_real_minus_mono_ns);

// Rebuilds DIR/results.json from DIR/results.jsonl (each line a trial with its configuration).
BenchResults rebuild_external_results(const std::string& out_dir);

}  // namespace coldstart::lab
