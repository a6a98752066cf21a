#include "gpu/cuda.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"

namespace coldstart::gpu {

std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", b[i]);
  }
  return s;
}

void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw RuntimeError(fmt::format("{}: {} ({})", what, cudaGetErrorName(rc), cudaGetErrorString(rc)));
}

CudaFacts probe_cuda() {
  CudaFacts f;
  cudaRuntimeGetVersion(&f.runtime_version);
  cudaDriverGetVersion(&f.driver_version);
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) {
    if (f.driver_version == 0 || rc == cudaErrorInsufficientDriver)
      f.problem = f.driver_version == 0
                      ? "no NVIDIA driver found (libcuda.so.1 could not be loaded)"
                      : fmt::format("the NVIDIA driver ({}) is older than this build's CUDA runtime ({})",
                                    f.driver_version, f.runtime_version);
    else
      f.problem = rc == cudaSuccess ? "no NVIDIA GPU is visible to CUDA"
                                    : fmt::format("no NVIDIA GPU is usable ({})", cudaGetErrorString(rc));
    return f;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.bus_id = format_bus_id(p.pciDomainID, p.pciBusID, p.pciDeviceID);
    g.uuid = format_uuid(p.uuid);
    g.memory_bytes = p.totalGlobalMem;
    g.sm = 10 * p.major + p.minor;
    f.gpus.push_back(g);
  }
  f.available = !f.gpus.empty();
  if (!f.available) f.problem = "no NVIDIA GPU could be queried";
  return f;
}

std::vector<std::pair<int, int>> probe_compute_capabilities(std::string* problem) {
  std::vector<std::pair<int, int>> out;
  CudaFacts f = probe_cuda();
  if (!f.available) {
    *problem = f.problem;
    return out;
  }
  for (const auto& g : f.gpus) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g.index) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, g.index) == cudaSuccess)
      out.emplace_back(major, minor);
  }
  if (out.empty()) *problem = "CUDA gave no compute capability for its GPUs";
  return out;
}

std::vector<int> compute_capabilities(const CudaFacts& f) {
  std::vector<int> out;
  for (const auto& g : f.gpus) {
    int major = 0, minor = 0;
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g.index) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, g.index) == cudaSuccess;
    out.push_back(ok && major > 0 && minor >= 0 && minor < 10 ? 10 * major + minor : -1);
  }
  return out;
}

}  // namespace coldstart::gpu
