// Per-configuration statistics over the rank-samples of its ok trials.
#pragma once
#include <vector>

#include "results/result.h"

namespace coldstart {

std::vector<ConfigSummary> summarize(const std::vector<Config>& configs, const std::vector<TrialResult>& trials);

}  // namespace coldstart
