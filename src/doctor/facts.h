// What doctor knows about this node and this process, as NCCL will see it. Collected once (collect_facts), or read
// back from JSON (a fact set recorded on another machine), so that the rules can be tested on real nodes' facts.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpu/cuda.h"
#include "gpu/nvml.h"
#include "model/validate.h"

namespace coldstart::doctor {

struct NcclLibFact {
  std::string path;  // as found
  std::string resolved;
  std::string version;  // "" when it did not load
  std::string problem;
  bool would_load = false;  // the one a process's default search picks
};

struct Facts {
  std::string host;
  gpu::NvmlFacts nvml;   // layer 3: the physical node
  gpu::CudaFacts cuda;   // layer 1: what the CUDA runtime shows this process
  std::vector<int> vmm;  // per CUDA device: cuMem (virtual memory management) supported: 1, 0, -1 unknown
  bool cvd_set = false;
  std::string cvd;  // CUDA_VISIBLE_DEVICES as given
  std::vector<NcclLibFact> nccl;
  std::map<std::string, std::string> env;  // NCCL_*, CUDA_*, RAY_*, torchrun's variables
  int64_t shm_bytes = -1;                  // size of /dev/shm
  int64_t memlock_bytes = -2;              // RLIMIT_MEMLOCK soft limit; -1 unlimited
  int host_netns = -1;                     // 1: same network namespace as PID 1, 0: not, -1: unknown
};

Facts collect_facts();
// The rules of a fact set beyond its JSON shape (coldstart.facts/1): GPU indices are positions, the P2P matrix is
// square over NVML's GPUs, the tri-state fields are -1, 0 or 1, one library is the search's pick. The refusal names
// the field ("nvml.p2p[1]: 1 entries for 2 GPUs").
inline constexpr size_t kMaxGpus = 4096;
inline constexpr int kMaxNvlinks = 64;
std::optional<Invalid> check_facts(const Facts& f);
nlohmann::json to_json(const Facts& f);
Facts facts_from_json(const nlohmann::json& j);  // throws InputError on a malformed fact set

}  // namespace coldstart::doctor
