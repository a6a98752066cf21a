// Expansion of a BenchSpec into configurations (the cartesian product of modes, --env axes and NCCL libraries) and
// the shuffled, interleaved order in which their trials run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/spec.h"

namespace coldstart::lab {

struct TrialPlan {
  int index = 0;  // position in the run
  int config_id = 0;
  int repeat = 0;  // 0..trials-1 within its configuration
};

std::vector<Config> expand(const BenchSpec& spec);
std::vector<TrialPlan> schedule(const std::vector<Config>& configs, int trials, uint64_t seed);

}  // namespace coldstart::lab
