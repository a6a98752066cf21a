// Per-configuration statistics over the rank-samples of its ok trials.
#pragma once
#include <vector>

#include "results/result.h"

namespace coldstart {

// nccl: the libraries the run resolved, so that labels name a library by its version ("NCCL 2.28.9").
std::vector<ConfigSummary> summarize(const std::vector<Config>& configs, const std::vector<TrialResult>& trials,
                                     const std::vector<NcclLibInfo>& nccl = {});

}  // namespace coldstart
