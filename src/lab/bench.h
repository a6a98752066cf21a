// The lab: runs a BenchSpec's trials (every configuration, shuffled and interleaved, each in fresh processes), keeps
// every finished trial on disk at once, and returns the whole run.
#pragma once
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "gpu/cuda.h"
#include "lab/observer.h"
#include "model/result.h"

namespace coldstart::lab {

struct BenchOptions {
  std::string out_dir;  // must not exist yet (unless allow_existing)
  bool allow_existing = false;
  bool out_created = false;                 // the caller made out_dir for this run (a default name): ours to remove
  std::vector<std::string> worker_command;  // default: this binary + "worker"
  std::string bind = "127.0.0.1";           // the coordinator listens here
  std::string advertise;                    // the address ranks are told (default: see coord::advertised_address)
  std::vector<std::string> argv;            // recorded in the results
  int gpus = 0;                             // --gpus: 0 = all
  bool ranks_per_gpu_given = false;         // --ranks-per-gpu was given (else one GPU runs 2 ranks; see prepare)
  bool modes_given = true;                  // --modes was given (else one GPU's 2 ranks run one launch model)
  BenchObserver* observer = nullptr;        // told of each trial as it starts, streams and ends
  bool resume = false;                      // finish the run in out_dir: skip the trials results.jsonl holds
  std::string run_id;                       // with resume: the run's id (from run.json)
};

inline constexpr const char* kRunSchema = "coldstart.run/1";

// A run's settings as bench resolved them (DIR/run.json), for --resume: read as a regular file of at most 16 MiB,
// its spec under the rules of model/validate.h. Throws InputError naming the folder and the field.
struct RunSettings {
  BenchSpec spec;
  std::string run_id;
};
inline constexpr size_t kMaxRunSettingsBytes = size_t{16} << 20;
RunSettings load_run_settings(const std::string& dir);
// The trials a run has finished (results.jsonl), by index; interrupted trials and a last line torn by a crash are
// left out. A line of another run, of another configuration, of the wrong shape, or breaking the rules of a trial of
// this run (model/validate.h: a rank outside the job, a trial index twice) is an InputError naming the file and line:
// nothing is merged.
std::map<int, TrialResult> finished_trials(const std::string& jsonl, const std::string& run_id, const BenchSpec& spec,
                                           const std::vector<Config>& configs);

// Thrown when bench needs a GPU and CUDA has none; the message is the one line to print.
struct NoGpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Resolves the job's devices (spec.devices, else CUDA_VISIBLE_DEVICES, else every GPU CUDA sees; the first --gpus of
// them). Throws InputError when --gpus asks for more than there are.
std::vector<std::string> resolve_devices(const std::vector<std::string>& given, int gpus, const gpu::CudaFacts& cuda,
                                         bool dry_run);

BenchResults run_bench(BenchSpec spec, const BenchOptions& opts);

// What every run records about where it ran: coldstart's version, the host, the time, the command line and the
// NCCL/CUDA/Ray variables inherited (the node's GPUs and libraries are added by whoever can see them).
RunContext new_run_context(const std::vector<std::string>& argv);

// Ranks holding different NCCL unique ids wait for each other forever and look like an NCCL hang: when the ranks'
// id hashes differ, the trial becomes an error that names each rank's id. Returns whether it did.
bool name_unique_id_mixup(TrialResult& t);

// Whether every trial ended ok.
bool all_ok(const BenchResults& r);

// What each rank of each configuration sees (for --dry-run).
std::string render_visibility(const BenchResults& r);

}  // namespace coldstart::lab
