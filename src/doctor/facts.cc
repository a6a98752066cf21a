#include "doctor/facts.h"

#include <dlfcn.h>
#include <sched.h>
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
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuInfo, index, name, bus_id, uuid, memory_bytes, sm)
}  // namespace coldstart

namespace coldstart::gpu {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NvmlGpu, index, name, bus_id, uuid, nvlinks, persistence, mig)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NvmlFacts, available, problem, driver_version, gpus, p2p)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CudaFacts, available, problem, driver_version, runtime_version, gpus)
}  // namespace coldstart::gpu

namespace coldstart::doctor {
using gpu::NvmlGpu;
using nlohmann::json;
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NcclLibFact, path, resolved, version, problem, would_load, sass, ptx,
                                                ptx_bytes, arch_problem)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JitCacheFact, path, exists, writable, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TopoFileFact, path, readable, problem)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Facts, host, nvml, cuda, vmm, cvd_set, cvd, nccl, env, shm_bytes,
                                                memlock_bytes, host_netns, compute_capabilities, jit_cache, nofile_soft,
                                                nofile_hard, topo_file, cpus)

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

int usable_cpus(int affinity, std::string_view cpu_max) {
  if (affinity < 1) return -1;
  const std::vector<std::string> parts = split(trim(cpu_max), ' ');
  if (parts.size() != 2) return affinity;
  const std::optional<int64_t> quota = parse_int(parts[0]), period = parse_int(parts[1]);
  if (!quota || !period || *quota < 1 || *period < 1) return affinity;  // "max": no quota
  return static_cast<int>(std::min<int64_t>(affinity, (*quota + *period - 1) / *period));
}

namespace {
// The CPUs this process may use: sched_getaffinity's count, bounded by its cgroup v2 CPU quota (a container's CPU
// limit), where /proc/self/cgroup names a cgroup v2 path whose cpu.max is readable.
int probe_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  std::string cpu_max;
  try {
    const std::string self = read_file_limited("/proc/self/cgroup", 64 * 1024);
    for (const std::string& line : split(self, '\n'))
      if (starts_with(line, "0::/"))
        cpu_max = read_file_limited(std::string("/sys/fs/cgroup").append(trim(line.substr(3))) + "/cpu.max", 4096);
  } catch (const std::exception&) {
    // no cgroup v2, or no cpu controller there: the affinity alone
  }
  return usable_cpus(CPU_COUNT(&set), cpu_max);
}
}  // namespace

Facts collect_facts() {
  Facts f;
  f.host = hostname();
  f.nvml = gpu::probe_nvml();
  f.cuda = gpu::probe_cuda();
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
  if (auto it = f.env.find("NCCL_TOPO_FILE"); it != f.env.end()) f.topo_file = read_topo_file(it->second);
  struct statvfs sv {};
  if (statvfs("/dev/shm", &sv) == 0)
    f.shm_bytes = static_cast<int64_t>(sv.f_blocks) * static_cast<int64_t>(sv.f_frsize);
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
    f.memlock_bytes = rl.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_cur);
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    f.nofile_soft = rl.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_cur);
    f.nofile_hard = rl.rlim_max == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_max);
  }
  f.cpus = probe_cpus();
  std::error_code e1, e2;
  auto mine = std::filesystem::read_symlink("/proc/self/ns/net", e1);
  auto init = std::filesystem::read_symlink("/proc/1/ns/net", e2);
  if (!e1 && !e2) f.host_netns = mine == init ? 1 : 0;
  collect_jit_facts(f);
  return f;
}

json to_json(const Facts& f) {
  json j = f;
  j["schema"] = "coldstart.facts/1";
  return j;
}

namespace {
std::optional<Invalid> one_of_three(const std::string& path, int v, std::string_view meaning) {
  if (v >= -1 && v <= 1) return std::nullopt;
  return Invalid{path, fmt::format("{} ({})", v, meaning)};
}

// GPU indices are positions: each in [0, n) and none twice, as the rules index other lists by them.
template <class G>
std::optional<Invalid> check_indices(const std::string& path, const std::vector<G>& gpus) {
  std::set<int> seen;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const int index = gpus[i].index;
    if (index < 0 || static_cast<size_t>(index) >= gpus.size())
      return Invalid{fmt::format("{}[{}].index", path, i), fmt::format("{} (give 0 to {})", index, gpus.size() - 1)};
    if (!seen.insert(index).second)
      return Invalid{fmt::format("{}[{}].index", path, i), fmt::format("{} twice", index)};
  }
  return std::nullopt;
}

// The open-files limits: each a count, -1 unlimited or -2 unknown, and the soft one never above the hard one.
std::optional<Invalid> check_nofile(const Facts& f) {
  for (auto [name, v] : {std::pair{"nofile_soft", f.nofile_soft}, {"nofile_hard", f.nofile_hard}})
    if (v < -2) return Invalid{name, fmt::format("{} (files, -1 unlimited, -2 unknown)", v)};
  const bool soft_above = f.nofile_hard >= 0 && (f.nofile_soft == -1 || f.nofile_soft > f.nofile_hard);
  if (soft_above)
    return Invalid{"nofile_soft", fmt::format("{} above the hard limit {}", f.nofile_soft, f.nofile_hard)};
  return std::nullopt;
}
}  // namespace

std::optional<Invalid> check_facts(const Facts& f) {
  if (f.nvml.gpus.size() > kMaxGpus || f.cuda.gpus.size() > kMaxGpus)
    return Invalid{f.nvml.gpus.size() > kMaxGpus ? "nvml.gpus" : "cuda.gpus",
                   fmt::format("more than {} GPUs", kMaxGpus)};
  if (auto bad = check_indices("nvml.gpus", f.nvml.gpus)) return bad;
  if (auto bad = check_indices("cuda.gpus", f.cuda.gpus)) return bad;
  for (size_t i = 0; i < f.nvml.gpus.size(); ++i) {
    const NvmlGpu& g = f.nvml.gpus[i];
    const std::string at = fmt::format("nvml.gpus[{}]", i);
    if (g.nvlinks < 0 || g.nvlinks > kMaxNvlinks)
      return Invalid{at + ".nvlinks", fmt::format("{} (give 0 to {})", g.nvlinks, kMaxNvlinks)};
    if (auto bad = one_of_three(at + ".persistence", g.persistence, "1 on, 0 off, -1 unknown")) return bad;
    if (auto bad = one_of_three(at + ".mig", g.mig, "1 enabled, 0 disabled, -1 unknown")) return bad;
  }
  // The P2P matrix is indexed [i][j] over the GPUs: a ragged or short one is refused, never read past its end.
  const auto& p2p = f.nvml.p2p;
  if (!p2p.empty() && p2p.size() != f.nvml.gpus.size())
    return Invalid{"nvml.p2p", fmt::format("{} rows for {} GPUs", p2p.size(), f.nvml.gpus.size())};
  for (size_t i = 0; i < p2p.size(); ++i)
    if (p2p[i].size() != p2p.size())
      return Invalid{fmt::format("nvml.p2p[{}]", i), fmt::format("{} entries for {} GPUs", p2p[i].size(), p2p.size())};
  if (f.vmm.size() > f.cuda.gpus.size())
    return Invalid{"vmm", fmt::format("{} entries for {} CUDA devices", f.vmm.size(), f.cuda.gpus.size())};
  for (size_t i = 0; i < f.vmm.size(); ++i)
    if (auto bad = one_of_three(fmt::format("vmm[{}]", i), f.vmm[i], "1 cuMem, 0 none, -1 unknown")) return bad;
  if (f.shm_bytes < -1) return Invalid{"shm_bytes", fmt::format("{} (bytes, or -1 unknown)", f.shm_bytes)};
  if (f.memlock_bytes < -2)
    return Invalid{"memlock_bytes", fmt::format("{} (bytes, -1 unlimited, -2 unknown)", f.memlock_bytes)};
  if (auto bad = one_of_three("host_netns", f.host_netns, "1 the host's, 0 another, -1 unknown")) return bad;
  if (auto bad = check_nofile(f)) return bad;
  if (f.cpus < -1 || f.cpus == 0 || f.cpus > kMaxCpus)
    return Invalid{"cpus", fmt::format("{} (give 1 to {}, or -1 unknown)", f.cpus, kMaxCpus)};
  if (auto bad = one_of_three("topo_file.readable", f.topo_file.readable, "1 read, 0 not readable, -1 unknown"))
    return bad;
  size_t loads = 0;
  for (size_t i = 0; i < f.nccl.size(); ++i)
    if (f.nccl[i].would_load && ++loads > 1)
      return Invalid{fmt::format("nccl[{}].would_load", i), "true for a second library (the search picks one)"};
  return check_jit_facts(f);
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
  if (auto bad = check_facts(f)) throw InputError("malformed fact set: " + bad->text());
  return f;
}

}  // namespace coldstart::doctor
