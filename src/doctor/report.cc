#include "doctor/report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "doctor/cvd.h"
#include "util/strings.h"

namespace coldstart::doctor {
using nlohmann::json;

namespace {
// The physical GPUs to resolve CUDA_VISIBLE_DEVICES against: NVML's, or plain indices when NVML is absent.
std::vector<gpu::NvmlGpu> node_gpus(const Facts& f, size_t at_least) {
  if (f.nvml.available) return f.nvml.gpus;
  std::vector<gpu::NvmlGpu> g(std::max(at_least, f.cuda.gpus.size()));
  for (size_t i = 0; i < g.size(); ++i) g[i].index = static_cast<int>(i);
  return g;
}
}  // namespace

std::vector<RankView> rank_views(const BenchResults& dry, const Facts& f) {
  std::vector<RankView> out;
  if (dry.trials.empty()) return out;
  auto gpus = node_gpus(f, dry.trials.front().ranks.size());
  for (const auto& r : dry.trials.front().ranks) {
    RankView v;
    v.rank = r.rank;
    v.cuda_visible_devices = r.cuda_visible_devices;
    v.device_index = r.device_index;
    // An empty list is how a rank reports the variable unset (Ray's noset mode): every GPU visible.
    v.visible_nvml = analyze_cvd(!r.cuda_visible_devices.empty(), r.cuda_visible_devices, gpus).visible_nvml;
    if (auto it = r.launcher.find("name"); it != r.launcher.end() && it->second == "ray") {
      auto get = [&](const char* k) { return r.launcher.count(k) ? r.launcher.at(k) : std::string("?"); };
      v.launcher = "Ray: GPU id " + get("gpu_ids") + ", CUDA_VISIBLE_DEVICES " +
                   (get("noset") == "1" ? std::string("left unset (RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1)")
                                        : "set by Ray to " + get("cuda_visible_devices_set_by_ray"));
    }
    if (static_cast<size_t>(r.device_index) < v.visible_nvml.size())
      v.own_nvml = v.visible_nvml[static_cast<size_t>(r.device_index)];
    out.push_back(v);
  }
  return out;
}

Facts facts_of_run(const BenchResults& r) {
  Facts f;
  f.host = r.context.host;
  f.cuda.available = !r.context.gpus.empty();
  f.cuda.gpus = r.context.gpus;
  f.env = r.context.inherited_env;
  return f;
}

std::vector<Finding> masked_advice(const BenchResults& r, const Facts& f) {
  BenchResults masked;  // the first trial of a masked configuration, as rank_views expects
  for (const auto& t : r.trials)
    if (static_cast<size_t>(t.config_id) < r.configs.size() &&
        (r.configs[static_cast<size_t>(t.config_id)].mode == Mode::isolated ||
         r.configs[static_cast<size_t>(t.config_id)].mode == Mode::ray)) {
      masked.trials.push_back(t);
      break;
    }
  std::vector<Finding> advice;
  if (masked.trials.empty()) return advice;
  for (auto& finding : evaluate({&f, rank_views(masked, f), &r}))
    if (finding.id == "masked-cumem") advice.push_back(std::move(finding));
  return advice;
}

namespace {

// Layer 3: the GPUs as NVML lists them, whatever CUDA_VISIBLE_DEVICES says.
std::string node_section(const Facts& f) {
  std::string o;
  o += "Layer 3 · the node (NVML, ignores CUDA_VISIBLE_DEVICES)\n";
  if (!f.nvml.available) {
    o += "  " + f.nvml.problem + "\n";
  } else {
    o += fmt::format("  driver {}, {} GPU(s)\n", f.nvml.driver_version, f.nvml.gpus.size());
    for (const auto& g : f.nvml.gpus)
      o += fmt::format("  {}  {}  bus {}  {}  NVLinks {}  persistence {}  MIG {}\n", g.index, g.name, g.bus_id, g.uuid,
                       g.nvlinks,
                       g.persistence == 1   ? "on"
                       : g.persistence == 0 ? "off"
                                            : "?",
                       g.mig == 1   ? "on"
                       : g.mig == 0 ? "off"
                                    : "n/a");
    if (f.nvml.p2p.size() > 1) {
      o += "  P2P (read):";
      for (size_t i = 0; i < f.nvml.p2p.size(); ++i)
        for (size_t j = 0; j < f.nvml.p2p.size(); ++j)
          if (i != j) o += fmt::format("  {}->{} {}", i, j, f.nvml.p2p[i][j]);
      o += "\n";
    }
  }
  return o;
}

// Layer 1: CUDA_VISIBLE_DEVICES read entry by entry, and what the CUDA runtime sees through it.
std::string process_section(const Facts& f) {
  std::string o;
  o += "\nLayer 1 · this process (CUDA runtime)\n";
  CvdAnalysis cvd = analyze_cvd(f.cvd_set, f.cvd, node_gpus(f, 0));
  if (!f.cvd_set) {
    o += "  CUDA_VISIBLE_DEVICES is not set: every GPU is visible\n";
  } else {
    o += "  CUDA_VISIBLE_DEVICES=" + f.cvd + "\n";
    for (const auto& e : cvd.entries)
      o += fmt::format("    '{}': {}{}{}\n", e.text, e.kind,
                       e.nvml_index >= 0 ? fmt::format(" → GPU {}", e.nvml_index) : "",
                       e.note.empty() ? "" : " (" + e.note + ")");
  }
  if (f.cuda.available) {
    o += fmt::format("  CUDA {} (driver supports {}) sees {} GPU(s):", f.cuda.runtime_version, f.cuda.driver_version,
                     f.cuda.gpus.size());
    for (size_t i = 0; i < f.cuda.gpus.size(); ++i)
      o += fmt::format("  {}={}{}", i, f.cuda.gpus[i].bus_id,
                       i < f.vmm.size() && f.vmm[i] == 1   ? " (cuMem)"
                       : i < f.vmm.size() && f.vmm[i] == 0 ? " (no cuMem)"
                                                           : "");
    o += "\n";
  } else {
    o += "  " + f.cuda.problem + "\n";
  }
  return o;
}

// Layer 2: what each rank of --ranks' plan would see, and whether its peers' GPUs are among it.
std::string peers_section(const std::vector<RankView>& ranks) {
  std::string o;
  o += "\nLayer 2 · NCCL peers\n";
  if (ranks.empty()) {
    o += "  (give --ranks N --mode MODE to see what each rank of a job would see)\n";
  } else {
    for (const auto& r : ranks) {
      std::vector<std::string> sees;
      for (int g : r.visible_nvml) sees.push_back(std::to_string(g));
      bool all = true;
      for (const auto& other : ranks)
        all &= std::find(r.visible_nvml.begin(), r.visible_nvml.end(), other.own_nvml) != r.visible_nvml.end();
      o += fmt::format("  rank {}: CUDA_VISIBLE_DEVICES={} device {} → uses GPU {}, sees GPUs {}{}\n", r.rank,
                       r.cuda_visible_devices.empty() ? "(unset)" : r.cuda_visible_devices, r.device_index, r.own_nvml,
                       join(sees, ","), all ? "" : "  MASKED: peers' GPUs are invisible to its CUDA runtime");
      if (!r.launcher.empty()) o += "    " + r.launcher + "\n";
    }
  }
  return o;
}

// The NCCL libraries found, and the one a process loads by default.
std::string libraries_section(const Facts& f) {
  std::string o;
  o += "\nNCCL libraries\n";
  for (const auto& lib : f.nccl) {
    // Its GPU code (nccl-no-sass): "  SASS 80,90 PTX 90", or why it could not be read
    const std::string code = !lib.arch_problem.empty() ? "  (GPU code not read: " + lib.arch_problem + ")"
                             : lib.sass.empty() && lib.ptx.empty()
                                 ? ""
                                 : fmt::format("  SASS {} PTX {}", lib.sass.empty() ? "none" : join(lib.sass, ","),
                                               lib.ptx.empty() ? "none" : join(lib.ptx, ","));
    o += fmt::format("  {}{}{}{}\n", lib.resolved.empty() ? lib.path : lib.resolved,
                     lib.version.empty() ? "  (" + lib.problem + ")" : "  " + lib.version, code,
                     lib.would_load ? "  ← a process's default" : "");
  }
  if (f.nccl.empty()) o += "  none found\n";
  return o;
}

// The variables that matter, and the limits (shared memory, memlock, network namespace, open files).
std::string environment_section(const Facts& f) {
  std::string o;
  o += "\nEnvironment\n";
  for (const auto& [k, v] : f.env) o += "  " + k + "=" + v + "\n";
  if (f.env.empty()) o += "  no NCCL_*, CUDA_*, RAY_* or torchrun variables set\n";
  o += fmt::format("  /dev/shm {}, memlock {}, host network namespace {}\n",
                   f.shm_bytes >= 0 ? format_bytes(static_cast<double>(f.shm_bytes)) : "?",
                   f.memlock_bytes == -1  ? "unlimited"
                   : f.memlock_bytes >= 0 ? format_bytes(static_cast<double>(f.memlock_bytes))
                                          : "?",
                   f.host_netns == 1   ? "yes"
                   : f.host_netns == 0 ? "no"
                                       : "unknown");
  const auto files = [](int64_t v) { return v == -1 ? std::string("unlimited") : v >= 0 ? std::to_string(v) : "?"; };
  if (f.nofile_soft != -2)
    o += "  open files " + files(f.nofile_soft) + " (soft), " + files(f.nofile_hard) + " (hard)\n";
  if (f.cpus > 0) o += fmt::format("  CPUs this process may use {}\n", f.cpus);
  return o;
}

}  // namespace

std::string render_report(const Facts& f, const std::vector<RankView>& ranks, const std::vector<Finding>& findings) {
  return fmt::format("coldstart doctor — {}\n\n", f.host) + node_section(f) + process_section(f) +
         peers_section(ranks) + libraries_section(f) + environment_section(f) + "\nFindings\n" +
         render_findings(findings);
}

json report_json(const Facts& f, const std::vector<RankView>& ranks, const std::vector<Finding>& findings) {
  json rs = json::array();
  for (const auto& r : ranks) {
    rs.push_back({{"rank", r.rank},
                  {"cuda_visible_devices", r.cuda_visible_devices},
                  {"device_index", r.device_index},
                  {"visible_nvml", r.visible_nvml},
                  {"own_nvml", r.own_nvml}});
    if (!r.launcher.empty()) rs.back()["launcher"] = r.launcher;
  }
  return {{"schema", "coldstart.doctor/2"}, {"facts", to_json(f)}, {"ranks", rs}, {"findings", to_json(findings)}};
}

}  // namespace coldstart::doctor
