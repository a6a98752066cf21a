#include "results/summary.h"

#include <algorithm>
#include <map>

namespace coldstart {

std::vector<ConfigSummary> summarize(const std::vector<Config>& configs, const std::vector<TrialResult>& trials,
                                     const std::vector<NcclLibInfo>& nccl) {
  std::vector<ConfigSummary> out;
  for (const auto& c : configs) {
    ConfigSummary s;
    s.config_id = c.id;
    std::string nccl_name;
    for (const auto& lib : nccl)
      if (lib.requested == c.nccl_lib && !c.nccl_lib.empty()) nccl_name = "NCCL " + lib.version;
    s.label = c.label(nccl_name);
    std::vector<std::string> order;  // phase names in the order ranks ran them
    std::map<std::string, std::vector<double>> samples;
    std::vector<double> busbw, mem_init, mem_first, lazy;
    std::map<std::string, std::vector<double>> calls;
    for (const auto& t : trials) {
      if (t.config_id != c.id) continue;
      s.status_counts[t.status]++;
      if (t.status != "ok") continue;
      for (const auto& r : t.ranks) {
        for (const auto& p : r.phases) {
          if (!samples.count(p.name)) order.push_back(p.name);
          samples[p.name].push_back(p.dur_ms);
        }
        if (r.steady) busbw.push_back(r.steady->busbw_gbps);
        for (const auto& [cat, tally] : r.first_collective_calls) calls[cat].push_back(tally.ms);
        if (r.mem.after_init >= 0) mem_init.push_back(static_cast<double>(r.mem.after_init - r.mem.before_init));
        if (r.mem.after_first >= 0) mem_first.push_back(static_cast<double>(r.mem.after_first - r.mem.before_init));
        if (r.nccl) {
          // NCCL's own split of comm_init, as sub-phases "init.kernels", "init.connections", ...
          for (const auto& [part, ms] : r.nccl->init_timings_ms) {
            if (part == "total") continue;
            std::string name = "init." + part;
            if (!samples.count(name)) order.push_back(name);
            samples[name].push_back(ms);
          }
          lazy.push_back(r.nccl->lazy_count());
          s.masked_ranks += r.nccl->masked;
        }
      }
    }
    for (const auto& name : order) s.phases.push_back({name, coldstart::summarize(samples[name])});
    s.busbw_gbps = coldstart::summarize(busbw);
    s.mem_after_init = coldstart::summarize(mem_init);
    s.mem_after_first = coldstart::summarize(mem_first);
    s.lazy_connections = coldstart::summarize(lazy);
    for (auto& [cat, v] : calls) s.first_collective_calls[cat] = coldstart::summarize(v);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace coldstart
