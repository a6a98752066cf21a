#include "lab/capacity.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpu/nvml.h"
#include "util/error.h"

#include "util/strings.h"

namespace coldstart::lab {

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

void check_capacity(const BenchSpec& spec, const gpu::CudaFacts& cuda, BenchObserver* observer) {
  const std::vector<gpu::GpuMemory> memory = gpu::probe_gpu_memory();
  std::vector<GpuLoad> loads;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const std::string& d = spec.devices[i];
    auto it = std::find_if(cuda.gpus.begin(), cuda.gpus.end(),
                           [&](const GpuInfo& g) { return g.uuid == d || std::to_string(g.index) == d; });
    const GpuInfo* gpu = it != cuda.gpus.end() ? &*it : i < cuda.gpus.size() ? &cuda.gpus[i] : nullptr;
    if (!gpu) continue;
    auto m =
        std::find_if(memory.begin(), memory.end(), [&](const gpu::GpuMemory& x) { return x.bus_id == gpu->bus_id; });
    if (m == memory.end() || m->used_bytes > m->total_bytes) continue;
    loads.push_back({fmt::format("GPU {} ({})", d, gpu->bus_id), m->total_bytes, m->total_bytes - m->used_bytes,
                     spec.ranks_per_gpu});
  }
  if (auto refusal = capacity_refusal(loads)) throw InputError(*refusal);
  if (auto warning = capacity_warning(loads); warning && observer) observer->note(*warning);
}

}  // namespace coldstart::lab
