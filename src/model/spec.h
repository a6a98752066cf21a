// What a bench run is asked to do (BenchSpec, with every default in one place) and the configurations it expands
// into (Config). Pure data: parsing flags is the commands' and the lab's (lab/flags.h), serialising is model/json.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/vocab.h"

namespace coldstart {

// How many communicators a rank builds after the world one: none, K by ncclCommSplit, or K made fresh with their own
// unique ids (as RL frameworks build their groups).
struct Groups {
  enum class Kind { world, split, fresh } kind = Kind::world;
  int count = 0;
  static constexpr int kMax = 64;
  std::string name() const;                                   // "world", "split:4", "fresh:4"
  static std::optional<Groups> parse(std::string_view text);  // the inverse; nullopt when malformed
  bool operator==(const Groups&) const = default;
};

// One environment variable; no value means "unset in the rank's environment".
struct EnvSetting {
  std::string key;
  std::optional<std::string> value;
  bool operator==(const EnvSetting&) const = default;
};

// A matrix axis: KEY=v1,v2,... where an empty value means unset. KEY1+KEY2=v1,v2 ties variables: each value sets
// all of them (NCCL_MIN_NCHANNELS+NCCL_MAX_NCHANNELS=4,8 pins the channel count).
struct EnvAxis {
  std::string key;
  std::vector<std::optional<std::string>> values;
  bool operator==(const EnvAxis&) const = default;
};

// The job's own start-up work on each rank's main thread, between creating its communicator (NCCL level) or process
// group (torch level) and its first collective, as loading a model is (bench --startup): nothing, CPU work for a
// time, or host-to-device copies of a size, from pageable or page-locked (pinned) host memory, a piece at a time
// (h2d:32GiB/16MiB; 256 MiB unless said). Overlap (--fix prewarm) can only hide cost behind work that exists.
struct Startup {
  static constexpr uint64_t kDefaultPiece = uint64_t{256} << 20;
  enum class Kind { none, cpu, h2d, h2d_pinned } kind = Kind::none;
  double seconds = 0;              // cpu
  uint64_t bytes = 0;              // h2d, h2d_pinned
  uint64_t piece = kDefaultPiece;  // h2d, h2d_pinned: bytes per copy
  // "none", "cpu:300ms", "h2d:32GiB", "h2d-pinned:32GiB", "h2d:2GiB/16MiB" (the piece, when not the default)
  std::string name() const;
  static std::optional<Startup> parse(std::string_view text);  // the inverse; nullopt when malformed
  bool operator==(const Startup&) const = default;
};

// A fix for the cold start, measured as a matrix axis (bench --fix) against the same start-up work.
//   none           the baseline
//   cumem-off      NCCL_CUMEM_ENABLE=0: legacy IPC, connections at init
//   eager-connect  NCCL_RUNTIME_CONNECT=0: cuMem kept, every connection made at init
//   channels:N     NCCL_MAX_CTAS=N: fewer channels, fewer buffers to export and import
//   prewarm        communicator (torch: eager process group) and a minimal collective on a background thread,
//                  overlapped with the start-up work, joined before the first real collective
//   split-share    --groups split:K with splitShare=1: the groups reuse the world communicator's connections
//   socket-poll    NCCL_SOCKET_POLL_TIMEOUT_MSEC=1: NCCL's blocking socket waits (bootstrap, proxy) sleep in poll()
//                  instead of spinning, which leaves the cores to the threads they wait for (NCCL >= 2.29)
struct Fix {
  // patched_nccl is no --fix: the fix ranking names a patched NCCL (coldstart's nccl/ series) measured beside the
  // stock build of the same release (--nccl-lib STOCK,PATCHED) as a fix of the stock configurations.
  enum class Kind {
    none,
    cumem_off,
    eager_connect,
    channels,
    prewarm,
    split_share,
    socket_poll,
    patched_nccl
  } kind = Kind::none;
  int channels = 0;  // channels:N
  std::string name() const;
  static std::optional<Fix> parse(std::string_view text);
  std::vector<EnvSetting> env() const;     // what it sets in every rank (empty for behaviour fixes)
  std::string_view cost() const;           // what it gives up, in a sentence
  std::string_view cost_in_brief() const;  // the same in a few words, for a verdict's line
  bool operator==(const Fix&) const = default;
};
inline constexpr const char* kFixNames =
    "none, cumem-off, eager-connect, channels:N, prewarm, split-share or socket-poll";

// The link between the nodes of a job emulated on one machine (bench --link LATENCY[/RATE]): netem's delay and rate
// on each node's link, so a packet from one node to another is delayed once, by latency_s, on its way into the node.
struct Link {
  double latency_s = 0;   // whole microseconds, at most 10 s
  uint64_t rate_bps = 0;  // bits per second; 0: not limited
  bool any() const { return latency_s > 0 || rate_bps > 0; }
  // "50us/100gbit", "2ms", "0ms/10gbit"; "" for none
  std::string name() const;
  static std::optional<Link> parse(std::string_view text);  // the inverse; nullopt when malformed
  bool operator==(const Link&) const = default;
};

// The default axis of the README's matrix: NCCL_CUMEM_ENABLE unset (NCCL's default, on) and 0.
EnvAxis default_env_axis();

// An explicit launch model's view for one rank (--visible).
struct RankView {
  std::vector<std::string> devices;  // entries of CUDA_VISIBLE_DEVICES (indices or UUIDs)
  int device_index = -1;             // what the rank passes to cudaSetDevice; -1: its own GPU's position in devices
  bool operator==(const RankView&) const = default;
};

// The limits of a run, the same for bench's flags and for the files that record them (model/validate.h).
inline constexpr int kMaxTrials = 100'000;         // per configuration
inline constexpr int kMaxRanksPerGpu = 64;         // --ranks-per-gpu
inline constexpr int kMaxRanks = 65'536;           // ranks in one job
inline constexpr int kMaxIters = 1'000'000;        // --iters, --warmup
inline constexpr double kMaxTimeoutS = 24 * 3600;  // one trial's watchdog
inline constexpr int kMaxConnections = 1'000'000;  // one rank's connections of one transport (NCCL's log)
inline constexpr size_t kMaxTransports = 64;       // transports named in one rank's log
inline constexpr int kMaxNodes = 64;               // --nodes: nodes emulated on one machine

struct BenchSpec {
  std::vector<Mode> modes{Mode::shared, Mode::isolated, Mode::remap};
  std::vector<RankView> explicit_lists;            // --visible, for Mode::explicit_list
  std::vector<EnvAxis> env;                        // empty: default_env_axis()
  std::vector<std::string> nccl_libs;              // empty: the worker's default search
  std::vector<NcclLog> nccl_logs{NcclLog::light};  // NCCL's debug log per rank (a matrix axis)
  std::vector<std::string> devices;                // the job's GPUs, rank r owns devices[r / ranks_per_gpu]
  int ranks_per_gpu = 1;  // --ranks-per-gpu: several ranks on each GPU (NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE)
  int trials = 5;
  uint64_t seed = 0;  // 0: a random seed, recorded
  Collective collective = Collective::all_reduce;
  uint64_t size_bytes = 64ull << 20;
  Groups groups;
  double timeout_s = 120;
  int steady_iters = 20;
  int warmup_iters = 5;
  bool dry_run = false;
  std::vector<bool> traces{false};           // attach libcoldstart_cupti.so to the ranks (a matrix axis: off, on)
  std::vector<Startup> startups{Startup{}};  // the job's own start-up work (a matrix axis)
  std::vector<Fix> fixes{Fix{}};             // fixes to measure (a matrix axis)
  bool coverage = false;  // after the first collective, time the first call of other sizes and collectives
  Worker worker = Worker::nccl;
  Launcher launcher = Launcher::lab;
  std::string ray_address;    // --launcher ray: an existing cluster ("" = a local instance for the run)
  std::vector<int> nodes{1};  // --nodes: the job's ranks split evenly over this many nodes, each a network namespace
                              // with its own hostname (a matrix axis; 1: the lab's own host, as before)
  Link link;                  // --link: the nodes' link, for every configuration of more than one node

  int world = 0;  // the job's ranks where its GPUs are not known to coldstart (outside launchers); else devices
  int nranks() const { return world > 0 ? world : static_cast<int>(devices.size()) * ranks_per_gpu; }
};

// One cell of the matrix.
struct Config {
  int id = 0;  // its position in the run (trials refer to it)
  Mode mode = Mode::shared;
  std::vector<EnvSetting> env;  // what its ranks run with: --env's values in --env order, then the fix's own
  std::string nccl_lib;         // as --nccl-lib gave it; empty: the worker's default search
  NcclLog nccl_log = NcclLog::light;
  bool trace = false;
  Startup startup;
  Fix fix;
  int nodes = 1;         // the job's ranks over this many nodes (bench --nodes); named in label and key only above 1
  Link link;             // with nodes > 1: the link between them (bench --link); none otherwise
  std::string launcher;  // ranks started by an outside launcher ("torchrun", "slurm", ...): it replaces the launch
                         // model in the label; "" when the lab started them
  // "isolated · NCCL_CUMEM_ENABLE=0"; nccl_name replaces the library path when given ("NCCL 2.28.9").
  std::string label(const std::string& nccl_name = "") const;
  // The configuration's identity across runs, from its settings alone (not its position or display label):
  // "isolated|NCCL_CUMEM_ENABLE=0|nccl=|log=light|trace=off". Compare and outside launchers match on it.
  std::string key() const;
};

}  // namespace coldstart
