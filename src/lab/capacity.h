// Whether the node can hold the job, checked before any rank starts: a job of 32 or 64 ranks on one GPU makes as many
// CUDA contexts there, and NCCL's buffers grow with the peers (docs/scale.md). A job whose contexts alone cannot fit
// is refused in one line; one whose NCCL buffers may not fit is said, and run.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/cuda.h"
#include "lab/observer.h"
#include "model/spec.h"

namespace coldstart::lab {

// A CUDA context, about 550 MB a rank on an H100 with CUDA 13 (32 ranks: 17.6 GB used before NCCL's init,
// docs/results/2026-12-05-h100x1-growth); the lower figure makes the refusal certain, not a guess.
inline constexpr uint64_t kContextBytes = uint64_t{500} << 20;
// What NCCL added by the first collective, per rank, at 32 ranks on one GPU with cuMem on (48.3 GiB / 32); with it off
// 2.3 GiB at 16 ranks, and 32 ranks did not fit 80 GB (the same results).
inline constexpr uint64_t kNcclBytesPerRank = uint64_t{1536} << 20;

struct GpuLoad {
  std::string name;  // "GPU 0 (0000:00:06.0)"
  uint64_t total_bytes = 0, free_bytes = 0;
  int ranks = 0;  // the job's ranks on it
};

// The refusal when some GPU cannot hold its ranks' contexts ("--ranks-per-gpu 64: GPU 0 (...) has 30 GiB free of 80
// GiB; 64 ranks' CUDA contexts alone take about 31.2 GiB; ..."), else nothing.
std::optional<std::string> capacity_refusal(const std::vector<GpuLoad>& gpus);
// A line when some GPU may not hold its ranks' NCCL buffers beside their contexts, else nothing.
std::optional<std::string> capacity_warning(const std::vector<GpuLoad>& gpus);

// The job's GPUs with their ranks and free memory (NVML's, no context made), refused in one line (InputError) where
// the ranks' contexts cannot fit, said to the observer where NCCL's buffers may not. A device is found by its UUID or
// CUDA index as given, else by its place in the lab's own view; one NVML does not know is not checked.
void check_capacity(const BenchSpec& spec, const gpu::CudaFacts& cuda, BenchObserver* observer);

}  // namespace coldstart::lab
