// Bench results as typed data. Measurement fills these; renderers only read them. JSON is written once, at the edge,
// under a versioned schema; readers ignore fields they do not know.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpu/cuda.h"
#include "lab/matrix.h"
#include "lab/spec.h"
#include "util/proc.h"
#include "util/stats.h"

namespace coldstart {

inline constexpr const char* kBenchSchema = "coldstart.bench/1";

struct PhaseRecord {
  std::string name;
  double start_ms = 0;  // from the trial's start (the lab starting its first rank)
  double dur_ms = 0;
};

struct Steady {
  double bytes = 0;
  int iters = 0;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

struct Memory {  // bytes in use on the rank's GPU (total - free), -1 where not measured
  int64_t total = -1, before_init = -1, after_init = -1, after_first = -1;
  // The phase after which after_init was measured: where the communicator first exists (comm_init; for the torch
  // probe init_process_group when eager, barrier_wait when lazy, since the first barrier creates it).
  std::string after_init_at;
};

// What the rank's NCCL debug log said (bench --nccl-log light|full).
struct RankNccl {
  std::string log;      // the file
  std::string version;  // "2.28.9+cuda13.0"
  int comms = 0;
  int cuda_dev = -1, nvml_dev = -1;
  bool masked = false;                            // cudaDev != nvmlDev: CUDA_VISIBLE_DEVICES masks or reorders GPUs
  std::map<std::string, double> init_timings_ms;  // the world communicator's "Init timings", in ms
  std::map<std::string, int> transports_init;     // connections made inside init, by transport
  std::map<std::string, int> transports_lazy;     // connections made after init (at the first collective)
  int coll_channels = -1;
  double lazy_span_ms = -1;  // first to last lazy connection line, where timestamps exist
  std::vector<std::string> warnings;
  uint64_t warning_count = 0, problem_count = 0;
  int lazy_count() const;
};

// CUDA calls (bench --trace) of every process of the trial inside one of this rank's phases, by category.
struct CallTally {
  int count = 0;
  double ms = 0;
};

struct RankResult {
  int rank = 0;
  int pid = 0;
  std::string host;
  std::string cuda_visible_devices;        // what the launch model gave the rank
  std::map<std::string, std::string> env;  // the NCCL_* variables it ran with
  int device_index = 0;
  int visible_device_count = -1;  // what CUDA showed it
  std::string bus_id, uuid, gpu_name;
  std::string nccl_path, nccl_version;
  std::string uid_hash;
  std::vector<PhaseRecord> phases;
  std::string last_phase;  // the phase it was in (or last ended) when the trial ended
  bool in_phase = false;
  std::optional<Steady> steady;
  Memory mem;
  double overhead_ms = 0;                       // the worker's own time outside CUDA, NCCL and coordinator waits
  std::string exit;                             // "exit 0", "signal 9 (Killed)", "stopped by the lab"
  std::vector<ThreadState> threads;             // a rank stopped at the timeout: its threads as they were
  std::map<std::string, std::string> launcher;  // what the launcher gave it: {"name": "ray", "gpu_ids": "1", ...}
  std::string torch_version, torch_init;        // --worker torch: torch's version; "lazy" or "eager" init
  double exit_ms = 0;                           // from the end of its last phase to its exit (process teardown)
  std::string error;
  bool dry_run = false;
  std::optional<RankNccl> nccl;
  // CUDA calls inside first_enqueue (bench --trace): of this rank's process, and of its peers' processes (whose
  // service threads export and import buffers for it at the same time).
  std::map<std::string, CallTally> first_collective_calls, first_collective_peer_calls;

  const PhaseRecord* phase(const std::string& name) const;
};

struct TrialResult {
  int index = 0;
  int config_id = 0;
  int repeat = 0;
  std::string status;  // ok | hang | error | interrupted
  std::string message;
  double wall_ms = 0;          // the lab's own clock, first spawn to last reap
  double lab_overhead_ms = 0;  // wall_ms minus the slowest rank's span (process start to its last phase)
  std::vector<RankResult> ranks;
  std::vector<std::string> refusals;  // coordinator connections refused during the trial
};

struct NcclLibInfo {
  std::string requested;  // what --nccl-lib said ("" for the default search)
  std::string path;
  std::string version;
};

struct RunContext {
  std::string schema = kBenchSchema;
  std::string coldstart_version;
  std::string host;
  std::string started_at;  // ISO 8601, UTC
  std::vector<std::string> argv;
  int driver_version = 0, runtime_version = 0;
  std::vector<GpuInfo> gpus;
  std::vector<NcclLibInfo> nccl;
  std::map<std::string, std::string> inherited_env;  // NCCL_*, CUDA_*, ... as the lab found them
  uint64_t seed = 0;
  std::string launcher;  // "ray 2.52.0" when the ranks were Ray actors
};

struct PhaseStats {
  std::string name;
  Stats stats;
};

struct ConfigSummary {
  int config_id = 0;
  std::string label;
  std::map<std::string, int> status_counts;
  std::vector<PhaseStats> phases;  // over rank-samples of ok trials, in phase order
  Stats busbw_gbps, mem_after_init, mem_after_first;
  Stats lazy_connections;                               // per rank, from NCCL's log
  std::map<std::string, Stats> first_collective_calls;  // ms per call category inside first_enqueue (--trace)
  int masked_ranks = 0;                                 // rank-samples whose NCCL log shows cudaDev != nvmlDev
  const Stats* phase(const std::string& name) const;
};

struct BenchResults {
  RunContext context;
  BenchSpec spec;
  std::vector<Config> configs;
  std::vector<TrialResult> trials;
  std::vector<ConfigSummary> summaries;
};

nlohmann::json to_json(const TrialResult& t);
TrialResult trial_from_json(const nlohmann::json& j);
nlohmann::json config_to_json(const Config& c);
nlohmann::json spec_to_json(const BenchSpec& s);
BenchSpec spec_from_json(const nlohmann::json& j);
Config config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const BenchResults& r);
// Throws InputError naming `what` (a file) for another schema, or a field of the wrong type.
BenchResults bench_results_from_json(const nlohmann::json& j, const std::string& what);
BenchResults load_bench_results(const std::string& path);

// A rank's wire result (see worker.cc) turned into a RankResult with phase times relative to t0_ns; shift_ns moves
// the rank's CLOCK_MONOTONIC onto the coordinator's (0 on the same host).
RankResult rank_result_from_wire(const nlohmann::json& wire, int64_t t0_ns, int64_t shift_ns = 0);

// The shift from a rank's CLOCK_MONOTONIC to the coordinator's, for a rank on another host: through the rank's
// realtime anchor (its CLOCK_REALTIME minus CLOCK_MONOTONIC, sent with its result) and the realtime offset the
// coordinator estimated at hello (rank's realtime minus its own, one-way: off by the hello's network latency).
int64_t wire_clock_shift_ns(const nlohmann::json& wire, int64_t clock_offset_ns, int64_t server_real_minus_mono_ns);

}  // namespace coldstart
