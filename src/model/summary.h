// Per-configuration statistics of its ok trials: cold start (ready) over trials, phases over rank-samples.
#pragma once
#include <vector>

#include "model/result.h"

namespace coldstart {

// nccl: the libraries the run resolved, so that labels name a library by its version ("NCCL 2.28.9"); job_gpus: the
// ranks of the job (a rank that sees fewer GPUs is masked).
std::vector<ConfigSummary> summarize(const std::vector<Config>& configs, const std::vector<TrialResult>& trials,
                                     const std::vector<NcclLibInfo>& nccl = {}, int job_gpus = 0);

// The library the run resolved for what --nccl-lib named (a configuration's nccl_lib); nullptr when it has none.
const NcclLibInfo* nccl_lib_of(const std::vector<NcclLibInfo>& nccl, const std::string& requested);

// A configuration's label with its NCCL library named by version where the run resolved it ("NCCL 2.28.9").
std::string config_label(const Config& c, const std::vector<NcclLibInfo>& nccl);

// Libraries of one version (two builds of 2.30.7 with the same patches) get the folder that tells their paths apart
// after it, "2.30.7+peer-regions (next)", the nearest to the file that differs between them: labels stay unique.
void tell_apart(std::vector<NcclLibInfo>& nccl);

}  // namespace coldstart
