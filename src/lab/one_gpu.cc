#include "lab/one_gpu.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "gpu/nccl.h"
#include "ncclbuild/cache.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {

// A build of `coldstart nccl build` that runs 2 ranks on one GPU (complete, NCCL 2.30+, the newest), from the cache
// `coldstart nccl list` shows; nothing when there is none, or no home folder to find the cache in.
std::optional<ncclbuild::Entry> multi_rank_gpu_build() {
  try {
    return ncclbuild::newest_complete_from(ncclbuild::default_cache_dir(), nccl::kMultiRankGpuVersion);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// Said when the ranks run a build of the cache in place of the NCCL at hand (`instead`: why that one cannot).
std::string taking_build(const std::string& instead, const ncclbuild::Entry& e) {
  const auto& patches = e.manifest->patches;
  std::string line = fmt::format(
      "{}, so they run `coldstart nccl build`'s {} ({}), coldstart's patched NCCL {} ({}): the first collective "
      "shows the patched cold start",
      instead, e.name, e.manifest->library, e.manifest->version,
      patches.empty() ? "none read back" : join(patches, ", "));
  if (std::find(patches.begin(), patches.end(), "peer-regions") != patches.end())
    line += ", and --env NCCL_P2P_PEER_REGION=,0 times the stock connect path beside it";
  return line + " (--nccl-lib names another library)";
}

}  // namespace

std::string two_ranks_on_one_gpu(BenchSpec& spec) {
  const std::string why = "one GPU: a one-rank job has no peers, so no connection and no cold start to show";
  const std::string how =
      "give --nccl-lib an NCCL 2.30 or newer (`coldstart nccl build` makes one, which bench then takes by itself) to "
      "run 2 ranks on the GPU, or --ranks-per-gpu 1 to time one rank anyway";
  const std::string bench = spec.worker == Worker::torch ? "bench --worker torch" : "bench";
  std::string instead;  // why the NCCL at hand cannot run 2 ranks on the GPU ("" when it can, or a dry run cannot say)
  std::exception_ptr none_found;
  if (!spec.nccl_libs.empty()) {
    for (const auto& want : spec.dry_run ? std::vector<std::string>{} : spec.nccl_libs) {
      nccl::Library lib = nccl::load(ncclbuild::library_for(want));
      if (lib.version < nccl::kMultiRankGpuVersion)
        throw InputError(fmt::format("{} on {}, and {} is NCCL {}, which runs one rank a GPU; {}", bench, why, lib.path,
                                     lib.version_string(), how));
    }
  } else if (spec.worker == Worker::torch) {
    instead = "PyTorch's own NCCL (before 2.30) runs one rank a GPU";
  } else if (!spec.dry_run) {
    try {
      nccl::Library lib = nccl::load(ncclbuild::library_for(""));
      if (lib.version < nccl::kMultiRankGpuVersion)
        instead = fmt::format("{} is NCCL {}, which runs one rank a GPU", lib.path, lib.version_string());
    } catch (const RuntimeError&) {  // no NCCL where bench looks: a build of the cache does instead
      none_found = std::current_exception();
      instead = "no NCCL is installed where bench looks";
    }
  }
  std::string took;
  if (!instead.empty()) {
    auto build = multi_rank_gpu_build();
    if (!build && none_found) std::rethrow_exception(none_found);
    if (!build && !spec.dry_run) throw InputError(fmt::format("{} on {}, and {}; {}", bench, why, instead, how));
    if (build && !spec.dry_run) {
      // Bench took this build by itself: a library of it that does not load is the cache's to name, not --nccl-lib's
      try {
        nccl::load(build->manifest->library);
      } catch (const std::exception& e) {
        std::string reason = e.what();
        if (const auto colon = reason.find(": "); reason.starts_with("--nccl-lib ") && colon != std::string::npos)
          reason = reason.substr(colon + 2);
        throw InputError(fmt::format(
            "{} on {}, and {}; the build bench takes then, {} of `coldstart nccl list` ({}), does not load: {}; build "
            "it again with `coldstart nccl build --version {}`, or give --nccl-lib",
            bench, why, instead, build->name, build->manifest->library, reason, build->manifest->version));
      }
    }
    if (build) {
      spec.nccl_libs = {build->name};
      took = ". " + taking_build(instead, *build);
    }
  }
  spec.ranks_per_gpu = 2;
  return why + "; 2 ranks share it (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30+; --ranks-per-gpu 1 for one rank)" + took;
}

}  // namespace coldstart::lab
