// One rank of a trial. It runs the phases in order, streams a begin/end event for each to the coordinator (so a hung
// rank is known by its phase), and sends its result. Under --dry-run it touches neither CUDA nor NCCL and reports
// what it would see.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "model/spec.h"

namespace coldstart::worker {

struct WorkerOptions {
  int rank = 0;
  int nranks = 1;
  int device = 0;
  int64_t trial = 0;
  std::string coord_host = "127.0.0.1";
  uint16_t coord_port = 0;
  std::string token;
  Collective collective = Collective::all_reduce;
  uint64_t size_bytes = 64ull << 20;
  Groups groups;
  int steady_iters = 20;
  int warmup_iters = 5;
  std::string nccl_lib;
  bool dry_run = false;
  int wait_timeout_ms = 600'000;
  std::map<std::string, std::string> launcher;  // what an outside launcher gave this rank (reported as is)
  Startup startup;           // the job's own work between comm_init and the first collective (--startup)
  bool prewarm = false;      // --fix prewarm: a 1-element all-reduce on a background thread during the start-up
  bool split_share = false;  // --fix split-share: --groups split:K with splitShare=1
  bool coverage = false;     // after the first collective, time the first call of other collectives and sizes
};

// Returns the process exit status: 0, or 1 after reporting the error to the coordinator (and stderr).
int run_worker(const WorkerOptions& opts, int64_t main_entry_ns);

}  // namespace coldstart::worker
