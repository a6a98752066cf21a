#include "nccllog/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

namespace coldstart::nccllog {
using nlohmann::json;

std::string describe_transports(const std::map<std::string, int>& counts) {
  std::vector<std::pair<std::string, int>> v(counts.begin(), counts.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [k, n] : v) out += (out.empty() ? "" : ", ") + fmt::format("{} {}", k, n);
  return out.empty() ? "–" : out;
}

json to_json(const Comm& c) {
  json j = {{"comm", c.id},
            {"init_fn", c.init_fn},
            {"rank", c.rank},
            {"nranks", c.nranks},
            {"cuda_dev", c.cuda_dev},
            {"nvml_dev", c.nvml_dev},
            {"renumbered", c.renumbered()},
            {"bus_id", c.bus_id},
            {"comm_id", c.comm_id},
            {"init_complete", c.init_complete},
            {"destroyed", c.destroyed},
            {"init_timings", c.init_timings.parts},
            {"bootstrap_timings", c.bootstrap_timings},
            {"channels",
             {{"coll", c.coll_channels},
              {"collnet", c.collnet_channels},
              {"nvls", c.nvls_channels},
              {"p2p", c.p2p_channels},
              {"p2p_per_peer", c.p2p_channels_per_peer}}},
            {"transports", {{"init", c.init_connections}, {"lazy", c.lazy_connections}}},
            {"rings_connected", c.rings_connected},
            {"trees_connected", c.trees_connected}};
  if (c.t_init_start) j["t_init_start"] = *c.t_init_start;
  if (c.t_init_complete) j["t_init_complete"] = *c.t_init_complete;
  if (c.t_first_lazy) j["t_first_lazy"] = *c.t_first_lazy;
  if (c.t_last_lazy) j["t_last_lazy"] = *c.t_last_lazy;
  return j;
}

json to_json(const LogSummary& s) {
  json procs = json::array();
  for (const auto& p : s.processes) {
    json comms = json::array(), warnings = json::array();
    for (const auto& c : p.comms) comms.push_back(to_json(c));
    for (const auto& w : p.warnings) {
      json jw = {{"line", w.line}, {"where", w.where}, {"message", w.message}};
      if (w.t) jw["t"] = *w.t;
      warnings.push_back(jw);
    }
    procs.push_back({{"host", p.host},
                     {"pid", p.pid},
                     {"nccl_version", p.nccl_version},
                     {"cuda_driver", p.cuda_driver},
                     {"lines", p.lines},
                     {"timestamps", p.timestamps},
                     {"comms", comms},
                     {"warnings", warnings},
                     {"warning_count", p.warning_count}});
  }
  json problems = json::array();
  for (const auto& pr : s.problems) problems.push_back({{"file", pr.file}, {"line", pr.line}, {"what", pr.what}});
  return {{"schema", "coldstart.nccllog/2"},
          {"processes", procs},
          {"problems", problems},
          {"problem_count", s.problem_count},
          {"lines", s.lines}};
}

std::string render_table(const LogSummary& s) {
  static const char* kParts[] = {"kernels", "alloc",  "bootstrap",   "allgathers",
                                 "topo",    "graphs", "connections", "rest"};
  std::string out;
  for (const auto& p : s.processes) {
    out += fmt::format("{}:{}  NCCL {}  cudaDriverVersion {}  ({} lines)\n", p.host, p.pid,
                       p.nccl_version.empty() ? "?" : p.nccl_version, p.cuda_driver, p.lines);
    for (const auto& c : p.comms) {
      out += fmt::format(
          "  comm {} {} rank {}/{}  cudaDev {} nvmlDev {} busId {}{}\n", c.id, c.init_fn.empty() ? "?" : c.init_fn,
          c.rank, c.nranks, c.cuda_dev, c.nvml_dev, c.bus_id,
          c.renumbered()
              ? "  renumbered: cudaDev != nvmlDev (CUDA_VISIBLE_DEVICES hides or reorders this process's GPUs)"
              : "");
      if (c.init_timings.present()) {
        std::string parts;
        for (const char* k : kParts)
          if (auto it = c.init_timings.parts.find(k); it != c.init_timings.parts.end())
            parts += fmt::format("  init.{} {:.0f}", k, it->second * 1e3);
        out += fmt::format("    init {:.0f} ms:{}\n", c.init_timings.parts.at("total") * 1e3, parts);
      }
      if (c.coll_channels >= 0)
        out += fmt::format("    channels: {} coll, {} p2p ({} per peer), {} nvls\n", c.coll_channels, c.p2p_channels,
                           c.p2p_channels_per_peer, c.nvls_channels);
      out += fmt::format("    connections at init: {}\n", describe_transports(c.init_connections));
      out += fmt::format("    connections after init (lazy, at the first collective): {}",
                         describe_transports(c.lazy_connections));
      if (c.t_first_lazy && c.t_last_lazy)
        out += fmt::format("  over {:.0f} ms", (*c.t_last_lazy - *c.t_first_lazy) * 1e3);
      out += "\n";
    }
    for (const auto& w : p.warnings) out += fmt::format("  WARN line {}: {} {}\n", w.line, w.where, w.message);
    if (p.warning_count > p.warnings.size())
      out += fmt::format("  ... and {} more warnings\n", p.warning_count - p.warnings.size());
  }
  if (s.processes.empty()) out += "no NCCL log lines found (was NCCL_DEBUG=INFO set?)\n";
  for (const auto& pr : s.problems) out += fmt::format("problem: {}:{}: {}\n", pr.file, pr.line, pr.what);
  if (s.problem_count > s.problems.size())
    out += fmt::format("... and {} more problems\n", s.problem_count - s.problems.size());
  return out;
}

}  // namespace coldstart::nccllog
