#include "nccllog/facts.h"

namespace coldstart::nccllog {

RankNccl rank_facts(const LogSummary& log, const std::string& path) {
  RankNccl f;
  f.log = path;
  f.problem_count = log.problem_count;
  if (log.processes.empty()) return f;
  const Process& p = log.processes.front();
  f.version = p.nccl_version;
  f.comms = static_cast<int>(p.comms.size());
  f.warning_count = p.warning_count;
  for (size_t i = 0; i < p.warnings.size() && i < 8; ++i)
    f.warnings.push_back(p.warnings[i].where + " " + p.warnings[i].message);
  for (const auto& c : p.comms) {
    for (const auto& [k, v] : c.init_connections) f.init_connections[k] += v;
    for (const auto& [k, v] : c.lazy_connections) f.lazy_connections[k] += v;
  }
  if (p.comms.empty()) return f;
  const Comm& world = p.comms.front();
  f.cuda_dev = world.cuda_dev;
  f.nvml_dev = world.nvml_dev;
  f.renumbered = world.renumbered();
  f.coll_channels = world.coll_channels;
  for (const auto& [k, v] : world.init_timings.parts) f.init_timings_ms[k] = v * 1e3;
  if (world.t_first_lazy && world.t_last_lazy)
    f.lazy_connection_span_ms = (*world.t_last_lazy - *world.t_first_lazy) * 1e3;
  return f;
}

}  // namespace coldstart::nccllog
