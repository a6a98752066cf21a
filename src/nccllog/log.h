// What NCCL's own debug log (NCCL_DEBUG=INFO) says about each process and communicator: versions, where each rank
// sits (cudaDev vs nvmlDev: a masked process), the Init and Bootstrap timings, how every channel connected and
// whether at init or lazily afterwards, and warnings. Typed data only; see parser.h for how it is read.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace coldstart::nccllog {

// `Init timings` (seconds). 2.22 prints no alloc; absent fields stay unset.
struct InitTimings {
  std::string fn;                       // ncclCommInitRank, ncclCommSplit, ... ("" in the 2.22 form)
  std::map<std::string, double> parts;  // total, kernels, alloc, bootstrap, allgathers, topo, graphs, connections, rest
  bool present() const { return parts.count("total") > 0; }
};

struct Comm {
  std::string id;       // the comm pointer, "0x5646b6b33420"
  std::string init_fn;  // ncclCommInitRank, ncclCommInitRankConfig, ncclCommSplit, ...
  int rank = -1, nranks = -1, cuda_dev = -1, nvml_dev = -1;
  std::string bus_id;   // as NCCL prints it ("60")
  std::string comm_id;  // "0xba2b8575b8bb8c78"
  bool init_started = false, init_complete = false, destroyed = false;
  std::optional<double> t_init_start, t_init_complete;  // log timestamps (s since the epoch), where present
  int init_tid = 0;                                     // the thread that printed Init COMPLETE
  InitTimings init_timings;
  std::map<std::string, double> bootstrap_timings;  // total, create, send, recv, ring, delay
  int coll_channels = -1, collnet_channels = -1, nvls_channels = -1, p2p_channels = -1, p2p_channels_per_peer = -1;
  // Channel connections by transport text ("P2P/CUMEM", "P2P/IPC/read", "SHM/direct/direct", "NET/IB/0/GDRDMA"),
  // split by whether they were made before Init COMPLETE or after it (NCCL's runtime connect).
  std::map<std::string, int> init_connections, lazy_connections;
  std::optional<double> t_first_lazy, t_last_lazy;
  bool rings_connected = false, trees_connected = false;

  // NCCL's signature of a process whose CUDA numbering differs from NVML's: masked (it sees fewer GPUs) or only
  // reordered (remap). The log alone cannot tell which.
  bool renumbered() const { return cuda_dev >= 0 && nvml_dev >= 0 && cuda_dev != nvml_dev; }
  int lazy_connection_count() const;
  int init_count() const;
};

struct Warning {
  uint64_t line = 0;
  std::string where;  // "init.cc:1234 (func)" as NCCL prints it
  std::string message;
  std::optional<double> t;
};

struct Process {
  std::string host;
  int pid = 0;
  std::string nccl_version;  // "2.28.9+cuda13.0"
  int cuda_driver = -1;      // "cudaDriverVersion 13000"
  std::vector<Comm> comms;
  std::vector<Warning> warnings;  // the first kMaxWarnings
  uint64_t warning_count = 0;
  uint64_t lines = 0;
  bool timestamps = false;  // whether its lines carried parseable timestamps
};

struct Problem {
  std::string file;
  uint64_t line = 0;
  std::string what;
};

inline constexpr size_t kMaxWarnings = 64;
inline constexpr size_t kMaxProblems = 100;

struct LogSummary {
  std::vector<Process> processes;
  std::vector<Problem> problems;  // the first kMaxProblems malformed known lines
  uint64_t problem_count = 0;
  uint64_t lines = 0, bytes = 0;
};

}  // namespace coldstart::nccllog
