// bench results as a Chrome/Perfetto trace: one process track per rank per trial, trials one after another, phases
// as spans with NCCL's init sub-phases nested in comm_init, and (bench --trace) the CUDA calls of the first
// collective on a track of their own.
#pragma once
#include <string>
#include <vector>

#include "model/result.h"

namespace coldstart::report {

// "trial 3 · isolated · NCCL_CUMEM_ENABLE=0 · rank 1 (GPU 1, bus 0000:00:07.0)"
std::string track_name(const BenchResults& r, const TrialResult& t, const RankResult& rank);

// Chrome trace JSON text. Several runs go one after another, in the order given.
std::string perfetto_trace(const std::vector<const BenchResults*>& runs);

}  // namespace coldstart::report
