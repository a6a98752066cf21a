#include "model/summary.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace coldstart {

const NcclLibInfo* nccl_lib_of(const std::vector<NcclLibInfo>& nccl, const std::string& requested) {
  for (const auto& lib : nccl)
    if (lib.requested == requested) return &lib;
  return nullptr;
}

std::string config_label(const Config& c, const std::vector<NcclLibInfo>& nccl) {
  const NcclLibInfo* lib = c.nccl_lib.empty() ? nullptr : nccl_lib_of(nccl, c.nccl_lib);
  return lib && !lib->version.empty() ? c.label("NCCL " + lib->version) : c.label();
}

void tell_apart(std::vector<NcclLibInfo>& nccl) {
  // A path's folders, nearest the file first: /a/next/lib/libnccl.so.2 -> lib, next, a
  const auto folders = [](const std::string& path) {
    std::vector<std::string> out;
    for (std::filesystem::path p = std::filesystem::path(path).parent_path(); p.has_relative_path();
         p = p.parent_path())
      out.push_back(p.filename().string());
    return out;
  };
  std::map<std::string, std::vector<size_t>> by_version;
  for (size_t i = 0; i < nccl.size(); ++i)
    if (!nccl[i].version.empty()) by_version[nccl[i].version].push_back(i);
  for (const auto& [version, group] : by_version) {
    if (group.size() < 2) continue;
    std::vector<std::vector<std::string>> f;
    size_t depth = 0;
    for (size_t i : group) {
      f.push_back(folders(nccl[i].path));
      depth = std::max(depth, f.back().size());
    }
    // the nearest level at which every library's folder differs from the others'
    std::optional<size_t> level;
    for (size_t d = 0; d < depth && !level; ++d) {
      std::set<std::string> seen;
      for (const auto& one : f) seen.insert(d < one.size() ? one[d] : "/");
      if (seen.size() == group.size()) level = d;
    }
    for (size_t k = 0; k < group.size(); ++k) {
      NcclLibInfo& lib = nccl[group[k]];
      lib.version += " (" + (level && *level < f[k].size() ? f[k][*level] : lib.path) + ")";
    }
  }
}

std::vector<ConfigSummary> summarize(const std::vector<Config>& configs, const std::vector<TrialResult>& trials,
                                     const std::vector<NcclLibInfo>& nccl, int job_gpus) {
  std::vector<ConfigSummary> out;
  for (const auto& c : configs) {
    ConfigSummary s;
    s.config_id = c.id;
    s.label = config_label(c, nccl);
    std::vector<std::string> order;  // phase names in the order ranks ran them
    std::map<std::string, std::vector<double>> samples;
    std::vector<double> busbw, mem_init, mem_first, lazy, ready;
    std::map<std::string, std::vector<double>> calls, store;
    std::map<std::string, std::map<std::string, std::vector<double>>> phase_calls;
    for (const auto& t : trials) {
      if (t.config_id != c.id) continue;
      s.status_counts[std::string(name_of(t.status))]++;
      if (!t.ok()) continue;
      if (auto r = t.ready_ms()) ready.push_back(*r);
      for (const auto& r : t.ranks) {
        for (const auto& p : r.phases) {
          if (!samples.count(p.name)) order.push_back(p.name);
          samples[p.name].push_back(p.dur_ms);
        }
        if (r.steady) busbw.push_back(r.steady->busbw_gbps);
        for (const auto& [cat, tally] : r.first_collective_calls) calls[cat].push_back(tally.ms);
        for (const auto& [phase, tally] : r.store_calls) store[phase].push_back(tally.ms);
        for (const auto& [phase, by_cat] : r.phase_calls)
          for (const auto& [cat, tally] : by_cat) phase_calls[phase][cat].push_back(tally.ms);
        const Memory& m = r.mem;
        if (m.used_after_init_bytes >= 0 && m.used_before_init_bytes >= 0)
          mem_init.push_back(static_cast<double>(m.used_after_init_bytes - m.used_before_init_bytes));
        if (m.used_after_first_bytes >= 0 && m.used_before_init_bytes >= 0)
          mem_first.push_back(static_cast<double>(m.used_after_first_bytes - m.used_before_init_bytes));
        s.masked_ranks += r.masked(job_gpus);
        if (r.nccl) {
          // NCCL's own split of comm_init, as sub-phases "init.kernels", "init.connections", ...
          for (const auto& [part, ms] : r.nccl->init_timings_ms) {
            if (part == "total") continue;
            std::string name = "init." + part;
            if (!samples.count(name)) order.push_back(name);
            samples[name].push_back(ms);
          }
          lazy.push_back(r.nccl->lazy_connection_count());
          s.renumbered_ranks += r.nccl->renumbered;
        }
      }
    }
    for (const auto& name : order) s.phases.push_back({name, coldstart::summarize(samples[name])});
    s.ready = coldstart::summarize(ready);
    s.busbw_gbps = coldstart::summarize(busbw);
    s.nccl_mem_init = coldstart::summarize(mem_init);
    s.nccl_mem_first = coldstart::summarize(mem_first);
    s.lazy_connections = coldstart::summarize(lazy);
    for (auto& [cat, v] : calls) s.first_collective_calls[cat] = coldstart::summarize(v);
    for (auto& [phase, v] : store) s.store_ms[phase] = coldstart::summarize(v);
    for (auto& [phase, by_cat] : phase_calls)
      for (auto& [cat, v] : by_cat) s.phase_calls[phase][cat] = coldstart::summarize(v);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace coldstart
