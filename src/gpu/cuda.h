// Facts from the CUDA runtime (linked statically), read without creating a context.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "model/gpu.h"

namespace coldstart::gpu {

struct CudaFacts {
  bool available = false;
  std::string problem;      // why not, in one sentence, when !available
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;  // of the static runtime linked in
  std::vector<GpuInfo> gpus;
};

CudaFacts probe_cuda();
// The compute capabilities of the GPUs CUDA sees, as {major, minor}, one per GPU; none (and `problem` says why) when
// there is no driver or no GPU.
std::vector<std::pair<int, int>> probe_compute_capabilities(std::string* problem);
// Each GPU of f's compute capability as 10 * major + minor (90, 100), in f.gpus' order; -1 where CUDA cannot say.
std::vector<int> compute_capabilities(const CudaFacts& f);
std::string format_uuid(const cudaUUID_t& uuid);
// Throws RuntimeError "what: cudaErrorX (text)" when rc is not cudaSuccess.
void cuda_check(cudaError_t rc, const char* what);

}  // namespace coldstart::gpu
