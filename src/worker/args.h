// The worker's command line, written once: every flag `coldstart worker` takes, with its default and help. The lab
// writes it (to_argv), the worker reads it (from_argv, or the CLI through each_flag), and the torch probe
// (python/coldstart/torch_worker.py) takes the rank's part of it; tests/data/golden/worker_args.json, written from
// here, holds the two sides to the same flags and defaults.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace coldstart::worker {

struct WorkerFlag {
  std::string_view name;  // "--rank"
  std::string_view help;
  bool launcher_only = false;  // taken under an outside launcher only: coldstart worker's, not the torch probe's
  bool show_default = false;   // --help shows the default
};

// The values as the command line spells them: --collective, --groups and --startup stay text here and are read into
// the model's types where the worker runs (cli/worker_cmd.cc), with the flag's own error.
struct WorkerArgs {
  int rank = -1;    // -1: from the launcher's environment
  int nranks = -1;  // -1: from the launcher's environment
  int device = -1;  // -1: the local rank, or 0 when the rank sees one GPU
  int64_t trial = 0;
  std::string coord;  // HOST:PORT
  std::string collective = "all_reduce";
  uint64_t size = uint64_t{64} << 20;
  std::string groups = "world";
  int iters = 20;
  int warmup = 5;
  std::string nccl_lib;
  double timeout_s = 600;
  std::string out = "coldstart-out/external";
  std::string bind;
  bool mask = false;
  bool dry_run = false;
  std::string startup = "none";
  bool prewarm = false;
  bool split_share = false;
  bool coverage = false;

  // Calls f(flag, field) for every flag, in the order --help lists them: the one list of the worker's flags.
  template <class Self, class F>
  static void each_flag(Self& a, F&& f);

  // The flags whose value differs from the default, in each_flag's order (a flag without a value when set).
  std::vector<std::string> to_argv() const;
  // The inverse; throws InputError naming an unknown flag, a missing value or a value that is not a number.
  static WorkerArgs from_argv(const std::vector<std::string>& argv);
  bool operator==(const WorkerArgs&) const = default;
};

template <class Self, class F>
void WorkerArgs::each_flag(Self& a, F&& f) {
  f(WorkerFlag{"--rank", "This rank (default: from the launcher's environment)"}, a.rank);
  f(WorkerFlag{"--nranks", "Ranks in the job (default: from the launcher's environment)"}, a.nranks);
  f(WorkerFlag{"--device", "CUDA device index to select (default: the local rank, or 0 if it sees one GPU)"}, a.device);
  f(WorkerFlag{"--trial", "Trial id the coordinator expects"}, a.trial);
  f(WorkerFlag{"--coord", "Coordinator HOST:PORT (under a launcher: rank 0's, by default found from it)"}, a.coord);
  f(WorkerFlag{"--collective", "Collective to time"}, a.collective);
  f(WorkerFlag{"--size", "Bytes for the steady-state measurement"}, a.size);
  f(WorkerFlag{"--groups", "world | split:K | fresh:K"}, a.groups);
  f(WorkerFlag{"--iters", "Steady-state iterations"}, a.iters);
  f(WorkerFlag{"--warmup", "Steady-state warm-up iterations"}, a.warmup);
  f(WorkerFlag{"--nccl-lib", "NCCL library to load"}, a.nccl_lib);
  f(WorkerFlag{"--timeout", "Seconds to wait for peers at each coordinator step"}, a.timeout_s);
  f(WorkerFlag{"--out", "Under a launcher: where rank 0 writes results (trials accumulate)", true, true}, a.out);
  f(WorkerFlag{"--bind", "Under a launcher: the address rank 0's coordinator listens on", true}, a.bind);
  f(WorkerFlag{"--mask", "Under a launcher: show each rank only its own GPU (CUDA_VISIBLE_DEVICES), as Ray does", true},
    a.mask);
  f(WorkerFlag{"--dry-run", "Speak the protocol without touching CUDA or NCCL"}, a.dry_run);
  f(WorkerFlag{"--startup", "The job's own work before the first collective: none, cpu:300ms, h2d:4GiB"}, a.startup);
  f(WorkerFlag{"--prewarm", "A 1-element all-reduce on a background thread during the start-up work"}, a.prewarm);
  f(WorkerFlag{"--split-share", "--groups split:K with splitShare=1"}, a.split_share);
  f(WorkerFlag{"--coverage", "Time the first call of other collectives and sizes after the first"}, a.coverage);
}

// Registers every flag on `app`, read into `args`: coldstart worker's command line, and from_argv's.
void add_worker_flags(CLI::App& app, WorkerArgs& args);

}  // namespace coldstart::worker
