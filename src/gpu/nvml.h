// NVML, loaded at run time (libnvidia-ml.so.1): the physical view of the node, which ignores CUDA_VISIBLE_DEVICES.
// Its few types are declared here; every call goes through one table.
#pragma once
#include <string>
#include <vector>

namespace coldstart::gpu {

struct NvmlGpu {
  int index = 0;  // NVML's index (PCI order)
  std::string name, bus_id, uuid;
  int nvlinks = 0;       // active NVLinks
  int persistence = -1;  // 1 on, 0 off, -1 unknown
  int mig = -1;          // 1 enabled, 0 disabled, -1 unknown or unsupported
  bool operator==(const NvmlGpu&) const = default;
};

struct NvmlFacts {
  bool available = false;
  std::string problem;
  std::string driver_version;
  std::vector<NvmlGpu> gpus;
  // p2p[i][j]: NVML's P2P status between GPUs i and j for reads ("OK", "not supported", ...).
  std::vector<std::vector<std::string>> p2p;
};

NvmlFacts probe_nvml();

// Each GPU's memory as NVML counts it (no CUDA context is made to ask), by bus id; empty without NVML.
struct GpuMemory {
  std::string bus_id;
  unsigned long long total_bytes = 0, used_bytes = 0;
};
std::vector<GpuMemory> probe_gpu_memory();

}  // namespace coldstart::gpu
