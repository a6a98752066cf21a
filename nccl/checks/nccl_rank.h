// One rank of nccl_check: loads the NCCL library it is given, makes communicators with the unique id its launcher
// passes round, runs every collective at every size and checks every element it receives on the host. A watchdog
// ends the rank when a step makes no progress for the timeout. See docs/bench-micro.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace coldstart::micro {

struct NcclRankConfig {
  int rank = 0;
  int world = 2;
  int device = 0;  // the CUDA device index this rank selects
  std::string nccl_lib;
  std::vector<uint64_t> sizes;
  std::vector<std::string> collectives;
  std::vector<int> split_share;  // splitShare values to check split communicators with; empty: none
  int repeat = 1;                // communicators made and destroyed in turn
  uint64_t leak_tolerance = 64ull << 20;
  bool abort = false;
  bool abort_first = false;  // ncclCommAbort from another thread while the communicator's first all_reduce connects
  int concurrent = 0;        // children of the world that connect at once, each in a thread of its own (0: none)
  bool suspend = false;      // ncclCommSuspend(NCCL_SUSPEND_MEM) and ncclCommResume on the connected world, then checks
  int timeout_s = 120;       // per step
};

int run_nccl_rank(const NcclRankConfig& config);  // the exit code

}  // namespace coldstart::micro
