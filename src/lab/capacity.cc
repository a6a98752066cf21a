#include "lab/capacity.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace coldstart {

std::optional<std::string> capacity_refusal(const std::vector<GpuLoad>& gpus) {
  for (const GpuLoad& g : gpus) {
    const uint64_t contexts = kContextBytes * static_cast<uint64_t>(g.ranks);
    if (contexts > g.free_bytes)
      return fmt::format(
          "--ranks-per-gpu {0}: {1} has {2} free of {3}, and {0} ranks' CUDA contexts alone take about {4} ({5} "
          "each); give fewer ranks per GPU, or free the GPU",
          g.ranks, g.name, format_bytes(static_cast<double>(g.free_bytes)),
          format_bytes(static_cast<double>(g.total_bytes)), format_bytes(static_cast<double>(contexts)),
          format_bytes(static_cast<double>(kContextBytes)));
  }
  return std::nullopt;
}

std::optional<std::string> capacity_warning(const std::vector<GpuLoad>& gpus) {
  for (const GpuLoad& g : gpus) {
    const uint64_t need = (kContextBytes + kNcclBytesPerRank) * static_cast<uint64_t>(g.ranks);
    if (g.ranks > 1 && need > g.free_bytes)
      return fmt::format(
          "bench: {} ranks on {} may not fit its {} free: their contexts and NCCL's buffers took about {} a rank at "
          "32 ranks on one GPU (more with cuMem off; docs/scale.md); a rank that runs out fails its trial with CUDA's "
          "error",
          g.ranks, g.name, format_bytes(static_cast<double>(g.free_bytes)),
          format_bytes(static_cast<double>(kContextBytes + kNcclBytesPerRank)));
  }
  return std::nullopt;
}

}  // namespace coldstart
