// Bench results as typed data. Measurement fills these; renderers only read them. JSON is written once, at the edge,
// under a versioned schema; readers ignore fields they do not know.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gpu.h"
#include "model/spec.h"
#include "util/proc.h"
#include "util/stats.h"

namespace coldstart {

inline constexpr const char* kBenchSchema = "coldstart.bench/2";
inline constexpr const char* kBenchSchemaV1 = "coldstart.bench/1";  // still read (model/result_v1.cc upgrades it)

struct PhaseRecord {
  std::string name;
  double start_ms = 0;  // from the trial's start (the lab starting its first rank)
  double dur_ms = 0;
};

struct Steady {
  int64_t bytes = 0;  // the size of one call, nccl-tests' "size"
  int iters = 0;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

// GPU memory in use on the rank's device (total - free), in bytes, -1 where not measured. Absolute: what NCCL added
// is the difference from used_before_init (ConfigSummary's nccl_mem_*).
// GPU memory in use on the rank's device (total - free), in bytes, -1 where not measured. Absolute: what NCCL added
// is the difference from used_before_init_bytes (ConfigSummary's nccl_mem_*).
struct Memory {
  int64_t total_bytes = -1, used_before_init_bytes = -1, used_after_init_bytes = -1, used_after_first_bytes = -1;
  // The phase after which used_after_init_bytes was measured: where the communicator first exists (comm_init; for
  // the torch probe init_process_group when eager, barrier_wait when lazy, since the first barrier creates it).
  std::string after_init_at;
};

// What the rank's NCCL debug log said (bench --nccl-log light|full).
struct RankNccl {
  std::string log;      // the file
  std::string version;  // "2.28.9+cuda13.0"
  int comms = 0;
  int cuda_dev = -1, nvml_dev = -1;
  // cudaDev != nvmlDev: CUDA numbers this rank's GPU differently from NVML, because CUDA_VISIBLE_DEVICES hides or
  // reorders GPUs. Not the same as masked (RankResult::masked): remap's rank 1 is renumbered yet sees every GPU.
  bool renumbered = false;
  std::map<std::string, double> init_timings_ms;  // the world communicator's "Init timings", in ms
  std::map<std::string, int> init_connections;    // channel connections made inside init, by transport
  std::map<std::string, int> lazy_connections;    // made after init, at the first collective, by transport
  int coll_channels = -1;
  double lazy_connection_span_ms = -1;  // first to last lazy connection line, where timestamps exist
  std::vector<std::string> warnings;
  uint64_t warning_count = 0, problem_count = 0;
  int lazy_connection_count() const;
};

// CUDA calls (bench --trace) of every process of the trial inside one of this rank's phases, by category.
struct CallTally {
  int count = 0;
  double ms = 0;
};

// What a rank says about itself: the same fields, names, types and units from the C++ worker and the torch probe
// (both are checked against tests/data/golden/rank_report.json).
struct RankFacts {
  int rank = 0;
  int pid = 0;
  std::string host;
  Worker worker = Worker::nccl;
  std::string cuda_visible_devices;        // what the launch model gave the rank
  std::map<std::string, std::string> env;  // the NCCL_* variables it ran with
  int device_index = 0;
  int visible_device_count = -1;  // what CUDA showed it
  std::string bus_id, uuid, gpu_name;
  std::string nccl_path, nccl_version;
  std::string uid_hash;
  std::optional<Steady> steady;
  Memory mem;
  double overhead_ms = 0;  // the worker's own time outside CUDA, NCCL and coordinator waits
  // Where its process_start came from: "lab" (the lab's clock just before fork, ns) or "proc" (/proc/self/stat, in
  // clock ticks: a process an outside launcher started); "" when it has none.
  std::string start_source;
  std::map<std::string, std::string> launcher;  // what the launcher gave it: {"name": "ray", "gpu_ids": "1", ...}
  std::string torch_version, torch_init;        // --worker torch: torch's version; "lazy" or "eager" init
  bool dry_run = false;
  // --worker torch: the rendezvous store's calls on the rank's main thread, per phase they fell in (c10d's own: the
  // store barrier, gloo's address exchange, NCCL's unique id): {"init_process_group": {count, ms}}
  std::map<std::string, CallTally> store_calls;
};

// A phase on the rank's own CLOCK_MONOTONIC, as it reports it.
struct PhaseSpan {
  std::string name;
  int64_t start_ns = 0, end_ns = 0;
};

// The rank's report to the coordinator (its last message): its facts, its phases, and the anchors that move its
// clock onto the coordinator's when it runs on another host.
struct RankReport : RankFacts {
  std::vector<PhaseSpan> phases;
  int64_t mono_anchor_ns = 0;  // CLOCK_MONOTONIC at main()
  int64_t real_anchor_ns = 0;  // CLOCK_REALTIME at the same moment
};

// A rank of a finished trial: its report with phases relative to the trial's start, and what the lab saw.
struct RankResult : RankFacts {
  std::vector<PhaseRecord> phases;
  std::string last_phase;  // the phase it was in (or last ended) when the trial ended
  bool in_phase = false;
  std::string exit;                  // "exit 0", "signal 9 (Killed)", "stopped by the lab"
  bool stopped_by_lab = false;       // the lab ended it (a hang, another rank's error, an interrupt)
  bool exited_cleanly = false;       // it ended by itself with status 0
  std::vector<ThreadState> threads;  // a rank stopped at the timeout: its threads as they were
  double exit_ms = 0;                // from the end of its last phase to its exit (process teardown)
  std::string error;
  std::optional<RankNccl> nccl;
  // CUDA calls inside first_enqueue (bench --trace): of this rank's process, and of its peers' processes (whose
  // service threads export and import buffers for it at the same time).
  std::map<std::string, CallTally> first_collective_calls, first_collective_peer_calls;
  // CUDA calls of this rank's process inside its phases before the first collective (bench --trace), by phase and
  // category: cuda_context and comm_init, which tell the one GPU's sharing (context creation, kernel loading) from
  // NCCL's own work.
  std::map<std::string, std::map<std::string, CallTally>> phase_calls;

  const PhaseRecord* phase(const std::string& name) const;
  // Cold start, as a user feels it: from the rank's process start to its first collective done (the end of the
  // first phase that completes one: first_wait, or the torch probe's barrier_wait), through everything on the way.
  // nullopt when the rank did not get there.
  std::optional<double> ready_ms() const;
  // The phase whose end is that point (nullptr when the rank did not get there).
  const PhaseRecord* ready_phase() const;
  // The rank sees fewer GPUs than the job uses: its CUDA runtime cannot see peers it must reach (what doctor and the
  // docs call masked). Known where CUDA's count was reported.
  bool masked(int job_gpus) const { return visible_device_count >= 0 && visible_device_count < job_gpus; }
};

struct TrialResult {
  int index = 0;
  int config_id = 0;
  int repeat = 0;
  TrialStatus status = TrialStatus::ok;
  std::string message;
  double wall_ms = 0;          // the lab's own clock, first spawn to last reap
  double lab_overhead_ms = 0;  // wall_ms minus the slowest rank's span (process start to its last phase)
  std::vector<RankResult> ranks;
  std::vector<std::string> refusals;  // coordinator connections refused during the trial: the first ones as said
  uint64_t refused = 0;               // and how many in all
  std::string run_id;                 // the run it belongs to (RunContext::run_id): resume never mixes runs
  std::string config_key;             // its configuration's key, as the run had it
  bool ok() const { return status == TrialStatus::ok; }
  // A trial's cold start: its slowest rank's ready_ms (the job waits for every rank); nullopt unless all got there.
  std::optional<double> ready_ms() const;
  // The rank whose ready_ms that is (-1 when none).
  int slowest_rank() const;
  // The part of the trial's cold start after every rank reached the lab's barrier before init (sync_init): from the
  // last rank leaving it to the last rank's first collective done. What a fix can change; the part before (process
  // start, import torch, CUDA context, waiting for the slowest rank) is the same for every fix and varies between
  // trials by as much as a second. nullopt when a rank lacks the barrier or did not get there.
  std::optional<double> after_meeting_ms() const;
};

struct NcclLibInfo {
  std::string requested;  // what --nccl-lib said ("" for the default search)
  std::string path;
  std::string version;
  // Its GPU code (gpu/fatbin.h) beside the run's GPUs: the architectures it has SASS for, and how those GPUs get its
  // kernels (gpu::kernels_for: "sass", "ptx" compiled by the driver in each process's first load, "none"); both
  // empty when the library or the GPUs could not be read, or the ranks do not run it (the torch probe's default).
  std::vector<std::string> sass;
  std::string kernels;
};

struct RunContext {
  std::string schema = kBenchSchema;
  std::string run_id;  // random, per run; every trial line carries it
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
  Stats ready;                     // cold start: one value per ok trial, its slowest rank's ready_ms
  std::vector<PhaseStats> phases;  // over rank-samples of ok trials, in phase order
  Stats busbw_gbps;
  Stats nccl_mem_init, nccl_mem_first;  // bytes NCCL added: once its communicator exists / after the first collective
  Stats lazy_connections;               // per rank, from NCCL's log
  std::map<std::string, Stats> first_collective_calls;  // ms per call category inside first_enqueue (--trace)
  std::map<std::string, std::map<std::string, Stats>> phase_calls;  // the same per phase before it (phase_calls)
  std::map<std::string, Stats> store_ms;  // --worker torch: the store's ms per phase, over rank-samples that made calls
  int renumbered_ranks = 0;               // rank-samples whose NCCL log shows cudaDev != nvmlDev
  int masked_ranks = 0;                   // rank-samples that saw fewer GPUs than the job used
  const Stats* phase(const std::string& name) const;
  int ok() const;
  int total() const;
};

struct BenchResults {
  RunContext context;
  BenchSpec spec;
  std::vector<Config> configs;
  std::vector<TrialResult> trials;
  std::vector<ConfigSummary> summaries;
};

// One serialiser per type (model/result_write.cc); the run's JSON is to_json(BenchResults). Reading goes from the
// text straight into these structs (util/json_reader.h, model/result_read.cc); from_json, for code that holds a tree,
// reads its text the same way.
#define COLDSTART_JSON(T)                      \
  void to_json(nlohmann::json& j, const T& v); \
  void from_json(const nlohmann::json& j, T& v);
COLDSTART_JSON(Groups)
COLDSTART_JSON(Startup)
COLDSTART_JSON(Fix)
COLDSTART_JSON(EnvSetting)
COLDSTART_JSON(EnvAxis)
COLDSTART_JSON(RankView)
COLDSTART_JSON(BenchSpec)
COLDSTART_JSON(Config)
COLDSTART_JSON(GpuInfo)
COLDSTART_JSON(PhaseRecord)
COLDSTART_JSON(PhaseSpan)
COLDSTART_JSON(Steady)
COLDSTART_JSON(Memory)
COLDSTART_JSON(RankNccl)
COLDSTART_JSON(CallTally)
COLDSTART_JSON(RankReport)
COLDSTART_JSON(RankResult)
COLDSTART_JSON(TrialResult)
COLDSTART_JSON(NcclLibInfo)
COLDSTART_JSON(RunContext)
COLDSTART_JSON(PhaseStats)
COLDSTART_JSON(ConfigSummary)
COLDSTART_JSON(BenchResults)
#undef COLDSTART_JSON

// A results.json's text (or its parsed JSON) of schema /2 or /1 (upgraded on reading; summaries are recomputed).
// Throws InputError naming `what` (a file) for text that is not JSON, another schema, or a field of the wrong type.
BenchResults bench_results_from_text(std::string_view text, const std::string& what);
BenchResults bench_results_from_json(const nlohmann::json& j, const std::string& what);
BenchResults load_bench_results(const std::string& path);
inline constexpr size_t kMaxResultsBytes = size_t{512} << 20;  // what load_bench_results reads from one file
// A trial as results.jsonl holds it, of either schema.
TrialResult trial_from_json(const nlohmann::json& j);

// A rank's report as it arrived; a report of the wrong shape is an error naming what was wrong (it never throws).
std::optional<RankReport> parse_report(const nlohmann::json& j, std::string* error);

// A rank's report turned into a RankResult with phase times relative to t0_ns; shift_ns moves the rank's
// CLOCK_MONOTONIC onto the coordinator's (0 on the same host).
RankResult rank_result_from_report(const RankReport& report, int64_t t0_ns, int64_t shift_ns = 0);

// The shift from a rank's CLOCK_MONOTONIC to the coordinator's, for a rank on another host: through the rank's
// realtime anchor (its CLOCK_REALTIME minus CLOCK_MONOTONIC, sent with its report) and the realtime offset the
// coordinator estimated at hello (rank's realtime minus its own, one-way: off by the hello's network latency).
int64_t clock_shift_ns(const RankReport& report, int64_t clock_offset_ns, int64_t server_real_minus_mono_ns);

}  // namespace coldstart
