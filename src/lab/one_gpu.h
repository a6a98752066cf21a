// One GPU is a node too: a one-rank job has no peers, so no connection and no cold start to show. Rather than time a
// job that connects nothing, bench runs 2 ranks on the GPU, with the NCCL decided here (docs/bench.md).
#pragma once
#include <string>

#include "model/spec.h"

namespace coldstart::lab {

// Where the job would be one rank (one GPU, --ranks-per-gpu not given), 2 ranks share the GPU when every library the
// ranks run is NCCL 2.30+, and the line to say so is returned. Without --nccl-lib, where the NCCL at hand is older (the
// torch probe's, PyTorch's own, always is), the newest complete build of 2.30+ in `coldstart nccl build`'s cache
// becomes spec.nccl_libs and the line names it; without one, InputError naming the fix. A dry run loads no library: it
// plans the 2 ranks, and the torch probe takes the cache's build by name. A library given (--nccl-lib) is never
// replaced.
std::string two_ranks_on_one_gpu(BenchSpec& spec);

}  // namespace coldstart::lab
