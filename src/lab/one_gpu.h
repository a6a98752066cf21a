// One GPU is a node too: a one-rank job has no peers, so no connection and no cold start to show. Rather than time a
// job that connects nothing, bench runs 2 ranks on the GPU, with the NCCL decided here (docs/bench.md): what the node
// has, the stock and the patched build of `coldstart nccl build`'s cache side by side where both are there.
#pragma once
#include <string>

#include "lab/observer.h"
#include "model/spec.h"

namespace coldstart::lab {

// What bench says of the 2 ranks before the first trial: why and which NCCL (`said`), and, where the cache holds only
// one of a release's stock and patched builds, the command that adds the other (`hint`, else empty).
struct OneGpuPlan {
  std::string said;
  std::string hint;
  void tell(BenchObserver* observer) const;  // each line that is not empty, as a note
};

// Where the job would be one rank (one GPU, --ranks-per-gpu not given), 2 ranks share the GPU when every library the
// ranks run is NCCL 2.30+. Without --nccl-lib they run the builds of `coldstart nccl build`'s cache (the newest release
// of 2.30+ with a complete build: its patched and its stock build, or the one there is), each with the run's cuMem
// axis; with none cached, the NCCL at hand when it is 2.30+ (never PyTorch's own, for the torch probe); else InputError
// naming the fix. A dry run loads no library: it takes the cache's builds by name, and without them plans the 2 ranks
// on the NCCL at hand. A library given (--nccl-lib) is never replaced. Without --modes (and --visible), one launch
// model runs, isolated: on one GPU every model gives each rank the same view.
OneGpuPlan two_ranks_on_one_gpu(BenchSpec& spec, bool modes_given = true);

}  // namespace coldstart::lab
