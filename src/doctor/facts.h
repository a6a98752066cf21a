// What doctor knows about this node and this process, as NCCL will see it. Collected once (collect_facts), or read
// back from JSON (a fact set recorded on another machine), so that the rules can be tested on real nodes' facts.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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
  // The GPU code in the library's file (gpu/fatbin.h), as nvcc names the architectures ("90", "90a", "100f"): those
  // with machine code (SASS) and those with PTX, with each PTX's size uncompressed. All empty when not read, and
  // arch_problem says why.
  std::vector<std::string> sass, ptx;
  std::vector<int64_t> ptx_bytes;
  std::string arch_problem;
};

// The CUDA driver's JIT cache, where it keeps the code it compiled from PTX: CUDA_CACHE_PATH, or ~/.nv/ComputeCache.
// (CUDA_CACHE_DISABLE, CUDA_CACHE_MAXSIZE and CUDA_FORCE_PTX_JIT are in the environment facts.)
struct JitCacheFact {
  std::string path;    // "" when unknown (no home folder)
  int exists = -1;     // 1, 0, -1 unknown
  int writable = -1;   // 1: the driver can write there (or create it there), 0: it cannot, -1 unknown
  int64_t bytes = -1;  // what it holds now; -1 unknown
};

// NCCL_TOPO_FILE, where set: the topology file NCCL reads in place of its own detection (facts_topo.cc).
struct TopoFileFact {
  std::string path;     // the variable's value; "" when unset
  int readable = -1;    // 1, 0, -1 unknown (or unset)
  std::string problem;  // "" when it has what NCCL needs of it; else the first thing it lacks, or why it is unread
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
  std::vector<int> compute_capabilities;   // per CUDA device: 10 * major + minor (90, 100); -1 unknown
  JitCacheFact jit_cache;
  int64_t nofile_soft = -2;  // RLIMIT_NOFILE (open files): soft limit; -1 unlimited, -2 unknown
  int64_t nofile_hard = -2;  // and the hard limit the soft one may be raised to
  TopoFileFact topo_file;
  int cpus = -1;  // CPUs this process may use: its affinity, and its cgroup's CPU quota where smaller; -1 unknown
};

Facts collect_facts();
// The JIT facts (facts_jit.cc): each found library's GPU code, the GPUs' compute capabilities, the JIT cache; and
// their rules for check_facts (architectures as nvcc names them, one size per PTX, capabilities per CUDA device).
void collect_jit_facts(Facts& f);
std::optional<Invalid> check_jit_facts(const Facts& f);
// The topology file (facts_topo.cc): read it (at most 16 MiB), and what in its XML NCCL cannot use ("" for nothing):
// no <system>, or a <cpu> without an attribute NCCL's topology requires of it (numaid, arch; vendor on x86_64; family
// and model on Intel).
TopoFileFact read_topo_file(const std::string& path);
// The CPUs a process with this affinity count may use under cgroup v2's quota line (cpu.max: "max 100000" or
// "QUOTA PERIOD"): the affinity count, or the quota rounded up where that is smaller; -1 for a count below 1.
int usable_cpus(int affinity, std::string_view cpu_max);
std::string topo_xml_problem(std::string_view xml);
// The rules of a fact set beyond its JSON shape (coldstart.facts/1): GPU indices are positions, the P2P matrix is
// square over NVML's GPUs, the tri-state fields are -1, 0 or 1, one library is the search's pick. The refusal names
// the field ("nvml.p2p[1]: 1 entries for 2 GPUs").
inline constexpr size_t kMaxGpus = 4096;
inline constexpr int kMaxNvlinks = 64;
inline constexpr int kMaxCpus = 1 << 20;
std::optional<Invalid> check_facts(const Facts& f);
nlohmann::json to_json(const Facts& f);
Facts facts_from_json(const nlohmann::json& j);  // throws InputError on a malformed fact set

}  // namespace coldstart::doctor
