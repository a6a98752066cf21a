// What the user asked bench to run, before expansion into configurations.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lab/nccl_logging.h"
#include "lab/visibility.h"

namespace coldstart {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, sendrecv, all_to_all };
const char* collective_name(Collective c);
Collective parse_collective(const std::string& s);  // throws InputError naming --collective

// How many communicators a rank builds after the world one: none, K by ncclCommSplit, or K made fresh with their own
// unique ids (as RL frameworks build their groups).
struct Groups {
  enum class Kind { world, split, fresh } kind = Kind::world;
  int count = 0;
  std::string name() const;  // "world", "split:4", "fresh:4"
};
Groups parse_groups(const std::string& s);  // throws InputError naming --groups

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
};
EnvAxis parse_env_axis(const std::string& text);  // throws InputError naming --env

struct BenchSpec {
  std::vector<Mode> modes{Mode::shared, Mode::isolated, Mode::remap};
  std::vector<RankView> explicit_lists;            // --visible, for Mode::explicit_list
  std::vector<EnvAxis> env;                        // empty: the default axis NCCL_CUMEM_ENABLE=(unset),0
  std::vector<std::string> nccl_libs;              // empty: the worker's default search
  std::vector<NcclLog> nccl_logs{NcclLog::light};  // NCCL's debug log per rank (a matrix axis)
  std::vector<std::string> devices;                // the job's GPUs, rank r owns devices[r]
  int trials = 5;
  uint64_t seed = 0;
  Collective collective = Collective::all_reduce;
  uint64_t size_bytes = 64ull << 20;
  Groups groups;
  double timeout_s = 120;
  int steady_iters = 20;
  int warmup_iters = 5;
  bool dry_run = false;
  std::vector<bool> traces{false};  // attach libcoldstart_cupti.so to the ranks (a matrix axis: off, on)
  std::string worker = "nccl";      // nccl: coldstart's own worker; torch: the torch.distributed probe (Python)
  std::string launcher = "lab";     // lab: coldstart starts the ranks; ray: as Ray actors (modes ray, ray-noset)
  std::string ray_address;          // --launcher ray: an existing cluster ("" = a local instance for the run)

  int nranks() const { return static_cast<int>(devices.size()); }
};

// The default matrix of the README: every mode x NCCL_CUMEM_ENABLE unset/0.
EnvAxis default_env_axis();

}  // namespace coldstart
