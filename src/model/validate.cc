#include "model/validate.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "model/result.h"
#include "model/spec.h"

namespace coldstart {
namespace {

std::string at(const std::string& prefix, std::string_view field) {
  return prefix.empty() ? std::string(field) : prefix + "." + std::string(field);
}
std::string at(const std::string& prefix, size_t index) { return fmt::format("{}[{}]", prefix, index); }

// A whole number within [lo, hi], or the refusal saying which range.
template <class T>
std::optional<Invalid> in_range(const std::string& path, T v, T lo, T hi) {
  if (v >= lo && v <= hi) return std::nullopt;
  return Invalid{path, fmt::format("{} (give {} to {})", v, lo, hi)};
}

std::optional<Invalid> not_negative(const std::string& path, double v) {
  if (std::isfinite(v) && v >= 0) return std::nullopt;
  return Invalid{path, fmt::format("{} (a duration or size is never negative)", v)};
}

template <class V>
std::optional<Invalid> not_empty(const std::string& path, const V& v) {
  if (!v.empty()) return std::nullopt;
  return Invalid{path, "empty (a run has at least one value on each axis)"};
}

// Connection counts by transport, as NCCL's log gave them: each within what one rank can make, so that a rank's sum
// (RankNccl::lazy_connection_count) and a configuration's summary never wrap.
std::optional<Invalid> check_counts(const std::string& path, const std::map<std::string, int>& counts) {
  if (counts.size() > kMaxTransports)
    return Invalid{path, fmt::format("{} transports (NCCL has a handful; at most {})", counts.size(), kMaxTransports)};
  for (const auto& [name, n] : counts)
    if (auto bad = in_range(at(path, name), n, 0, kMaxConnections)) return bad;
  return std::nullopt;
}

std::optional<Invalid> check_rank(const RankResult& r, const std::string& p) {
  if (auto bad = in_range(at(p, "rank"), r.rank, 0, kMaxRanks - 1)) return bad;
  if (auto bad = in_range(at(p, "pid"), r.pid, 0, std::numeric_limits<int>::max())) return bad;
  if (auto bad = in_range(at(p, "visible_device_count"), r.visible_device_count, -1, kMaxRanks)) return bad;
  if (auto bad = in_range(at(p, "device_index"), r.device_index, -1, kMaxRanks)) return bad;
  for (size_t i = 0; i < r.phases.size(); ++i) {
    const std::string ph = at(at(p, "phases"), i);
    if (!std::isfinite(r.phases[i].start_ms))
      return Invalid{at(ph, "start_ms"), fmt::format("{} (not a time)", r.phases[i].start_ms)};
    if (auto bad = not_negative(at(ph, "dur_ms"), r.phases[i].dur_ms)) return bad;
  }
  const std::pair<const char*, int64_t> memory[] = {{"total_bytes", r.mem.total_bytes},
                                                    {"used_before_init_bytes", r.mem.used_before_init_bytes},
                                                    {"used_after_init_bytes", r.mem.used_after_init_bytes},
                                                    {"used_after_first_bytes", r.mem.used_after_first_bytes}};
  for (const auto& [name, v] : memory)
    if (v < -1) return Invalid{at(at(p, "mem"), name), fmt::format("{} (bytes, or -1 where not measured)", v)};
  if (r.steady) {
    if (r.steady->bytes < 0) return Invalid{at(p, "steady.bytes"), fmt::format("{} (a size)", r.steady->bytes)};
    if (auto bad = in_range(at(p, "steady.iters"), r.steady->iters, 0, kMaxIters)) return bad;
  }
  if (r.nccl) {
    const std::string n = at(p, "nccl");
    if (auto bad = in_range(at(n, "comms"), r.nccl->comms, 0, kMaxConnections)) return bad;
    if (auto bad = check_counts(at(n, "init_connections"), r.nccl->init_connections)) return bad;
    if (auto bad = check_counts(at(n, "lazy_connections"), r.nccl->lazy_connections)) return bad;
  }
  std::vector<std::pair<std::string, const std::map<std::string, CallTally>*>> calls = {
      {at(p, "first_collective_calls"), &r.first_collective_calls},
      {at(p, "first_collective_peer_calls"), &r.first_collective_peer_calls},
      {at(p, "store_calls"), &r.store_calls}};
  for (const auto& [phase, by_category] : r.phase_calls)
    calls.emplace_back(at(at(p, "phase_calls"), phase), &by_category);
  for (const auto& [path, by_category] : calls)
    for (const auto& [category, tally] : *by_category) {
      if (auto bad = in_range(at(at(path, category), "count"), tally.count, 0, kMaxConnections)) return bad;
      if (auto bad = not_negative(at(at(path, category), "ms"), tally.ms)) return bad;
    }
  return std::nullopt;
}

}  // namespace

std::optional<Invalid> check_spec(const BenchSpec& s, const std::string& prefix) {
  if (auto bad = not_empty(at(prefix, "modes"), s.modes)) return bad;
  std::set<Mode> modes;
  for (size_t i = 0; i < s.modes.size(); ++i)
    if (!modes.insert(s.modes[i]).second)
      return Invalid{at(at(prefix, "modes"), i),
                     fmt::format("{} twice (a run measures each launch model once)", name_of(s.modes[i]))};
  std::set<std::string> keys;
  for (size_t i = 0; i < s.env.size(); ++i) {
    const std::string e = at(at(prefix, "env"), i);
    if (s.env[i].key.empty()) return Invalid{at(e, "key"), "empty (an environment variable's name)"};
    if (!keys.insert(s.env[i].key).second)
      return Invalid{at(e, "key"), s.env[i].key + " twice (one axis per variable)"};
    if (auto bad = not_empty(at(e, "values"), s.env[i].values)) return bad;
  }
  if (auto bad = not_empty(at(prefix, "nccl_logs"), s.nccl_logs)) return bad;
  if (auto bad = not_empty(at(prefix, "traces"), s.traces)) return bad;
  if (auto bad = not_empty(at(prefix, "startups"), s.startups)) return bad;
  if (auto bad = not_empty(at(prefix, "fixes"), s.fixes)) return bad;
  if (auto bad = in_range(at(prefix, "ranks_per_gpu"), s.ranks_per_gpu, 1, kMaxRanksPerGpu)) return bad;
  if (auto bad = in_range(at(prefix, "world"), s.world, 0, kMaxRanks)) return bad;
  if (s.devices.size() * static_cast<size_t>(s.ranks_per_gpu) > static_cast<size_t>(kMaxRanks))
    return Invalid{at(prefix, "devices"), fmt::format("{} GPUs x {} ranks each (at most {} ranks)", s.devices.size(),
                                                      s.ranks_per_gpu, kMaxRanks)};
  if (auto bad = in_range(at(prefix, "trials"), s.trials, 1, kMaxTrials)) return bad;
  if (!(s.timeout_s > 0 && s.timeout_s <= kMaxTimeoutS))
    return Invalid{at(prefix, "timeout_s"),
                   fmt::format("{} (give more than 0 and at most {})", s.timeout_s, kMaxTimeoutS)};
  if (auto bad = in_range(at(prefix, "steady_iters"), s.steady_iters, 0, kMaxIters)) return bad;
  if (auto bad = in_range(at(prefix, "warmup_iters"), s.warmup_iters, 0, kMaxIters)) return bad;
  if (auto bad = in_range(at(prefix, "groups"), s.groups.count, 0, Groups::kMax)) return bad;
  if (auto bad = not_empty(at(prefix, "nodes"), s.nodes)) return bad;
  std::set<int> nodes;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    if (auto bad = in_range(at(at(prefix, "nodes"), i), s.nodes[i], 1, kMaxNodes)) return bad;
    if (!nodes.insert(s.nodes[i]).second)
      return Invalid{at(at(prefix, "nodes"), i), fmt::format("{} twice (each node count once)", s.nodes[i])};
  }
  return std::nullopt;
}

std::optional<Invalid> check_trial(const TrialResult& t, const BenchSpec& s, const std::vector<Config>& configs,
                                   const std::string& p) {
  if (auto bad = in_range(at(p, "index"), t.index, 0, std::numeric_limits<int>::max())) return bad;
  if (t.config_id < 0 || static_cast<size_t>(t.config_id) >= configs.size())
    return Invalid{at(p, "config_id"),
                   fmt::format("{}, a configuration the run does not have (it has {})", t.config_id, configs.size())};
  const Config& c = configs[static_cast<size_t>(t.config_id)];
  if (!t.config_key.empty() && t.config_key != c.key())
    return Invalid{at(p, "config_key"), fmt::format("'{}', but configuration {} is '{}'", t.config_key, c.id, c.key())};
  if (auto bad = in_range(at(p, "repeat"), t.repeat, 0, kMaxTrials - 1)) return bad;
  if (t.ranks.size() > static_cast<size_t>(kMaxRanks))
    return Invalid{at(p, "ranks"), fmt::format("{} ranks (at most {})", t.ranks.size(), kMaxRanks)};
  const int job = s.nranks();
  std::set<int> seen;
  for (size_t i = 0; i < t.ranks.size(); ++i) {
    const std::string r = at(at(p, "ranks"), i);
    if (auto bad = check_rank(t.ranks[i], r)) return bad;
    if (job > 0 && t.ranks[i].rank >= job)
      return Invalid{at(r, "rank"), fmt::format("{}, but the job has {} ranks", t.ranks[i].rank, job)};
    if (!seen.insert(t.ranks[i].rank).second)
      return Invalid{at(r, "rank"), fmt::format("{} twice in one trial", t.ranks[i].rank)};
  }
  return std::nullopt;
}

std::optional<Invalid> check_results(const BenchResults& r) {
  if (auto bad = check_spec(r.spec, "spec")) return bad;
  if (r.configs.empty()) return Invalid{"configs", "empty (a run has at least one configuration)"};
  std::map<std::string, size_t> keys;
  for (size_t i = 0; i < r.configs.size(); ++i) {
    const Config& c = r.configs[i];
    if (c.id != static_cast<int>(i))
      return Invalid{at(at("configs", i), "id"), fmt::format("{} (a configuration's id is its position, {})", c.id, i)};
    if (auto bad = in_range(at(at("configs", i), "nodes"), c.nodes, 1, kMaxNodes)) return bad;
    auto [it, fresh] = keys.emplace(c.key(), i);
    if (!fresh)
      return Invalid{at("configs", i), fmt::format("the same configuration as configs[{}] ('{}'); a run measures each "
                                                   "once, and compare could not tell them apart",
                                                   it->second, it->first)};
  }
  std::set<int> indices;
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const std::string p = at("trials", i);
    if (auto bad = check_trial(r.trials[i], r.spec, r.configs, p)) return bad;
    if (!indices.insert(r.trials[i].index).second)
      return Invalid{at(p, "index"), fmt::format("{} twice (each trial once)", r.trials[i].index)};
  }
  return std::nullopt;
}

}  // namespace coldstart
