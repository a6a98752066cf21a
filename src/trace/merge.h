// Reading what libcoldstart_cupti.so wrote (one cupti.<host>.<pid>.tsv per process) and putting it together with NCCL's
// logs: a Perfetto/Chrome trace, a per-process cold-start budget, and the attribution of a time window (bench's first
// collective) to CUDA calls of every process.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/result.h"
#include "nccllog/log.h"
#include "trace/trace_names.h"

namespace coldstart::trace {

struct Call {
  std::string name;
  uint32_t tid = 0;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC
  int64_t dur_ns = 0;
};

struct ProcessTrace {
  std::string file;
  std::string host;
  int pid = 0;
  int64_t mono_anchor_ns = 0, real_anchor_ns = 0;  // the same instant on both clocks
  long gmtoff_s = 0;                               // local time minus UTC, for NCCL's local-time stamps
  std::string error;                               // why the process was not traced
  uint64_t dropped = 0;                            // calls past the buffer
  std::map<uint32_t, std::string> threads;
  std::vector<Call> calls;
  // NCCL log timestamps (local time, seconds) on this process's monotonic clock.
  int64_t mono_of_log_time(double local_seconds) const;
};

// Throws InputError naming the file when it is not a coldstart CUPTI file; malformed call lines are skipped.
ProcessTrace read_process_trace(const std::string& path);
// Every cupti.*.tsv in a folder.
std::vector<ProcessTrace> read_trace_dir(const std::string& dir);
// Every nccl.*.log in a folder, parsed.
nccllog::LogSummary read_nccl_logs(const std::string& dir);

using Attribution = std::map<std::string, CallTally>;  // by category name

// CUDA calls of the process `pid` that overlap [start, end), clipped to it, by category.
Attribution attribute(const std::vector<ProcessTrace>& traces, int64_t start_ns, int64_t end_ns, int pid);
// The same for every process except `pid` (a rank's peers work for it in their service threads).
Attribution attribute_others(const std::vector<ProcessTrace>& traces, int64_t start_ns, int64_t end_ns, int pid);
// bench --trace: each rank's phases in CUDA calls, from a trial's files (t0_ns: the trial's start on CLOCK_MONOTONIC,
// from which the phases' start_ms count). Its first collective's calls, of its own process and of its peers'
// (first_collective_calls, first_collective_peer_calls), and those of its own process in its phases before it
// (phase_calls: cuda_context, comm_init), which tell the one GPU's sharing from NCCL's own work.
void attribute_phases(const std::vector<ProcessTrace>& traces, int64_t t0_ns, std::vector<RankResult>& ranks);

struct Budget {
  std::string host;
  int pid = 0;
  int rank = -1;  // from NCCL's log, when present
  CallTally context, kernel_loading;
  std::map<std::string, double> nccl_init_ms;  // NCCL's Init timings of its first communicator
  Attribution connection;  // cuMem/IPC calls after NCCL's Init COMPLETE (or over the whole run without a log)
  bool connection_after_init = false;  // whether the split at Init COMPLETE could be made
  double first_launch_ms = -1;         // first kernel launch, from the process's CUDA start
  std::string error;
  uint64_t dropped = 0;
};

std::vector<Budget> budgets(const std::vector<ProcessTrace>& traces, const nccllog::LogSummary& logs);
std::string render_budgets(const std::vector<Budget>& b);
nlohmann::json budgets_json(const std::vector<Budget>& b);
// Chrome trace-event JSON: one process track per process, one thread track per thread, API calls as complete
// events, NCCL's init and lazy connections from its log as spans and instants.
nlohmann::json perfetto(const std::vector<ProcessTrace>& traces, const nccllog::LogSummary& logs);

}  // namespace coldstart::trace
