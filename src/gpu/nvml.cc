#include "gpu/nvml.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "util/dl.h"
#include "util/strings.h"

namespace coldstart::gpu {
namespace {

using Device = struct nvmlDevice_st*;
using Ret = int;  // nvmlReturn_t; 0 is success
struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kMaxLinks = 18;
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total, free, used;
};

struct Table {
  Ret (*Init)();
  Ret (*Shutdown)();
  Ret (*GetCount)(unsigned int*);
  Ret (*GetHandle)(unsigned int, Device*);
  Ret (*GetName)(Device, char*, unsigned int);
  Ret (*GetPci)(Device, PciInfo*);
  Ret (*GetUuid)(Device, char*, unsigned int);
  Ret (*GetPersistence)(Device, int*);
  Ret (*GetMig)(Device, unsigned int*, unsigned int*);
  Ret (*GetNvLinkState)(Device, unsigned int, int*);
  Ret (*GetP2PStatus)(Device, Device, int, int*);
  Ret (*SystemGetDriverVersion)(char*, unsigned int);
  Ret (*GetMemory)(Device, NvmlMemory*);
};

const char* p2p_status(int s) {
  switch (s) {
    case 0: return "OK";
    case 1: return "chipset not supported";
    case 2: return "GPU not supported";
    case 3: return "IOH topology not supported";
    case 4: return "disabled by registry key";
    case 5: return "not supported";
    default: return "unknown";
  }
}
}  // namespace

std::vector<GpuMemory> probe_gpu_memory() {
  std::vector<GpuMemory> out;
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return out;
  Table t{};
  if (!(bind_symbol(h, "nvmlInit_v2", &t.Init) && bind_symbol(h, "nvmlShutdown", &t.Shutdown) &&
        bind_symbol(h, "nvmlDeviceGetCount_v2", &t.GetCount) &&
        bind_symbol(h, "nvmlDeviceGetHandleByIndex_v2", &t.GetHandle) &&
        bind_symbol(h, "nvmlDeviceGetPciInfo_v3", &t.GetPci) &&
        bind_symbol(h, "nvmlDeviceGetMemoryInfo", &t.GetMemory)) ||
      t.Init() != 0)
    return out;
  unsigned int n = 0;
  t.GetCount(&n);
  for (unsigned int i = 0; i < n; ++i) {
    Device d = nullptr;
    PciInfo pci{};
    NvmlMemory m{};
    if (t.GetHandle(i, &d) == 0 && t.GetPci(d, &pci) == 0 && t.GetMemory(d, &m) == 0)
      out.push_back({format_bus_id(pci.domain, pci.bus, pci.device), m.total, m.used});
  }
  t.Shutdown();
  return out;
}

NvmlFacts probe_nvml() {
  NvmlFacts f;
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    f.problem = "NVML is not available (libnvidia-ml.so.1 could not be loaded: no NVIDIA driver here)";
    return f;
  }
  Table t{};
  bool ok = bind_symbol(h, "nvmlInit_v2", &t.Init) && bind_symbol(h, "nvmlShutdown", &t.Shutdown) &&
            bind_symbol(h, "nvmlDeviceGetCount_v2", &t.GetCount) &&
            bind_symbol(h, "nvmlDeviceGetHandleByIndex_v2", &t.GetHandle) &&
            bind_symbol(h, "nvmlDeviceGetName", &t.GetName) && bind_symbol(h, "nvmlDeviceGetPciInfo_v3", &t.GetPci) &&
            bind_symbol(h, "nvmlDeviceGetUUID", &t.GetUuid) &&
            bind_symbol(h, "nvmlSystemGetDriverVersion", &t.SystemGetDriverVersion);
  if (!ok || t.Init() != 0) {
    f.problem = "NVML could not be initialised";
    return f;
  }
  bind_symbol(h, "nvmlDeviceGetPersistenceMode", &t.GetPersistence);
  bind_symbol(h, "nvmlDeviceGetMigMode", &t.GetMig);
  bind_symbol(h, "nvmlDeviceGetNvLinkState", &t.GetNvLinkState);
  bind_symbol(h, "nvmlDeviceGetP2PStatus", &t.GetP2PStatus);
  char ver[96] = {};
  if (t.SystemGetDriverVersion(ver, sizeof ver) == 0) f.driver_version = ver;
  unsigned int n = 0;
  t.GetCount(&n);
  std::vector<Device> devs;
  for (unsigned int i = 0; i < n; ++i) {
    Device d = nullptr;
    if (t.GetHandle(i, &d) != 0) continue;
    devs.push_back(d);
    NvmlGpu g;
    g.index = static_cast<int>(i);
    char buf[128] = {};
    if (t.GetName(d, buf, sizeof buf) == 0) g.name = buf;
    PciInfo pci{};
    if (t.GetPci(d, &pci) == 0) g.bus_id = format_bus_id(pci.domain, pci.bus, pci.device);
    char uuid[96] = {};
    if (t.GetUuid(d, uuid, sizeof uuid) == 0) g.uuid = uuid;
    int mode = 0;
    if (t.GetPersistence && t.GetPersistence(d, &mode) == 0) g.persistence = mode ? 1 : 0;
    unsigned int cur = 0, pend = 0;
    if (t.GetMig && t.GetMig(d, &cur, &pend) == 0) g.mig = cur ? 1 : 0;
    if (t.GetNvLinkState)
      for (unsigned int l = 0; l < kMaxLinks; ++l) {
        int active = 0;
        if (t.GetNvLinkState(d, l, &active) == 0 && active) ++g.nvlinks;
      }
    f.gpus.push_back(g);
  }
  f.p2p.assign(devs.size(), std::vector<std::string>(devs.size(), "-"));
  if (t.GetP2PStatus)
    for (size_t i = 0; i < devs.size(); ++i)
      for (size_t j = 0; j < devs.size(); ++j) {
        if (i == j) continue;
        int s = 0;
        f.p2p[i][j] = t.GetP2PStatus(devs[i], devs[j], 0, &s) == 0 ? p2p_status(s) : "unknown";
      }
  t.Shutdown();
  f.available = true;
  return f;
}

}  // namespace coldstart::gpu
