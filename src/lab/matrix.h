// Expansion of a BenchSpec into configurations (the cartesian product of modes, --env axes and NCCL libraries) and
// the shuffled, interleaved order in which their trials run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lab/spec.h"

namespace coldstart {

struct Config {
  int id = 0;
  Mode mode = Mode::shared;
  std::vector<EnvSetting> env;  // in --env order
  std::string nccl_lib;         // empty: the worker's default search
  NcclLog nccl_log = NcclLog::light;
  bool trace = false;
  std::string launcher;  // ranks started by an outside launcher ("torchrun", "slurm", ...): it replaces the
                         // launch model in the label; "" when the lab started them
  // "isolated · NCCL_CUMEM_ENABLE=0"; nccl_name replaces the library path when given ("NCCL 2.28.9").
  std::string label(const std::string& nccl_name = "") const;
};

struct TrialPlan {
  int index = 0;  // position in the run
  int config_id = 0;
  int repeat = 0;  // 0..trials-1 within its configuration
};

std::vector<Config> expand(const BenchSpec& spec);
std::vector<TrialPlan> schedule(const std::vector<Config>& configs, int trials, uint64_t seed);

}  // namespace coldstart
