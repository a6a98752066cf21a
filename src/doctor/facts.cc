#include "doctor/facts.h"

#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpu/nccl.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace coldstart {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NvmlGpu, index, name, bus_id, uuid, nvlinks, persistence, mig)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NvmlFacts, available, problem, driver_version, gpus, p2p)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuInfo, index, name, bus_id, uuid, memory_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CudaFacts, available, problem, driver_version, runtime_version, gpus)
}  // namespace coldstart

namespace coldstart::doctor {
using nlohmann::json;
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NcclLibFact, path, resolved, version, problem, would_load)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Facts, host, nvml, cuda, vmm, cvd_set, cvd, nccl, env, shm_bytes,
                                                memlock_bytes, host_netns)

namespace {
// cuMem support per device, from the driver (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102).
std::vector<int> probe_vmm(int count) {
  std::vector<int> out(static_cast<size_t>(count), -1);
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return out;
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(h, "cuInit"));
  auto get = reinterpret_cast<int (*)(int*, int)>(dlsym(h, "cuDeviceGet"));
  auto attr = reinterpret_cast<int (*)(int*, int, int)>(dlsym(h, "cuDeviceGetAttribute"));
  if (!init || !get || !attr || init(0) != 0) return out;
  for (int i = 0; i < count; ++i) {
    int dev = 0, v = 0;
    if (get(&dev, i) == 0 && attr(&v, 102, dev) == 0) out[static_cast<size_t>(i)] = v ? 1 : 0;
  }
  return out;
}

bool relevant_var(std::string_view k) {
  static const std::set<std::string> torchrun{"RANK",        "LOCAL_RANK",  "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                              "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK", "TORCHELASTIC_RUN_ID"};
  // The proxy variables in both spellings and Gloo's interface: doctor points to doctor net where they meet a
  // rendezvous.
  static const std::set<std::string> network{"http_proxy", "HTTP_PROXY",    "https_proxy",       "HTTPS_PROXY",
                                             "all_proxy",  "ALL_PROXY",     "grpc_proxy",        "no_proxy",
                                             "NO_PROXY",   "no_grpc_proxy", "GLOO_SOCKET_IFNAME"};
  return starts_with(k, "NCCL_") || starts_with(k, "CUDA_") || starts_with(k, "RAY_") || starts_with(k, "TORCH_NCCL") ||
         torchrun.count(std::string(k)) || network.count(std::string(k));
}
}  // namespace

Facts collect_facts() {
  Facts f;
  f.host = hostname();
  f.nvml = probe_nvml();
  f.cuda = probe_cuda();
  f.vmm = probe_vmm(static_cast<int>(f.cuda.gpus.size()));
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) {
    f.cvd_set = true;
    f.cvd = cvd;
  }
  bool first = true;
  for (const auto& path : nccl::candidate_paths("")) {
    NcclLibFact lib;
    lib.path = path;
    try {
      nccl::Library l = nccl::load(path);  // a bare name goes through the loader's search path
      lib.resolved = l.path;
      lib.version = l.name();
      lib.would_load = first;
      first = false;
    } catch (const std::exception& e) {
      if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) continue;  // not installed here
      lib.problem = e.what();
    }
    bool dup = false;
    for (const auto& other : f.nccl) dup |= !lib.resolved.empty() && other.resolved == lib.resolved;
    if (!dup) f.nccl.push_back(lib);
  }
  f.env = environment(relevant_var);
  for (auto& [k, v] : f.env)
    if (k.find("proxy") != std::string::npos || k.find("PROXY") != std::string::npos) v = redact_url_credentials(v);
  struct statvfs sv {};
  if (statvfs("/dev/shm", &sv) == 0)
    f.shm_bytes = static_cast<int64_t>(sv.f_blocks) * static_cast<int64_t>(sv.f_frsize);
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
    f.memlock_bytes = rl.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_cur);
  std::error_code e1, e2;
  auto mine = std::filesystem::read_symlink("/proc/self/ns/net", e1);
  auto init = std::filesystem::read_symlink("/proc/1/ns/net", e2);
  if (!e1 && !e2) f.host_netns = mine == init ? 1 : 0;
  return f;
}

json to_json(const Facts& f) {
  json j = f;
  j["schema"] = "coldstart.facts/1";
  return j;
}

Facts facts_from_json(const json& j) {
  if (!j.is_object() || j.value("schema", "") != "coldstart.facts/1")
    throw InputError(
        "not a coldstart fact set (schema coldstart.facts/1); give the JSON that `coldstart doctor --json` "
        "wrote under \"facts\"");
  Facts f;
  try {
    f = j.get<Facts>();
  } catch (const json::exception& e) {
    throw InputError(std::string("malformed fact set: ") + e.what());
  }
  // The P2P matrix is indexed [i][j] over the GPUs: a ragged or short one is refused, never read past its end.
  const auto& p2p = f.nvml.p2p;
  if (!p2p.empty() && p2p.size() != f.nvml.gpus.size())
    throw InputError(
        fmt::format("malformed fact set: nvml.p2p has {} rows for {} GPUs", p2p.size(), f.nvml.gpus.size()));
  for (size_t i = 0; i < p2p.size(); ++i)
    if (p2p[i].size() != p2p.size())
      throw InputError(
          fmt::format("malformed fact set: nvml.p2p[{}] has {} entries for {} GPUs", i, p2p[i].size(), p2p.size()));
  return f;
}

}  // namespace coldstart::doctor
