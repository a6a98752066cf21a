// JSON out: to_json of every result type, from the field lists (model/result_fields.h) or written by hand. The run's
// JSON is to_json(BenchResults), dumped once (util/json.h).
#include <string>

#include <nlohmann/json.hpp>

#include "model/result.h"
#include "model/result_fields.h"
#include "util/json.h"

namespace coldstart {
using nlohmann::json;

#define COLDSTART_TO_JSON(T, ...)                                            \
  inline void to_json(json& nlohmann_json_j, const T& nlohmann_json_t) {     \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__)) \
  }
#define COLDSTART_NO_READER(T)
COLDSTART_RESULT_FIELDS(COLDSTART_TO_JSON, COLDSTART_NO_READER)
#undef COLDSTART_NO_READER
#undef COLDSTART_TO_JSON

void to_json(json& j, const Groups& g) { j = g.name(); }
void to_json(json& j, const Startup& v) { j = v.name(); }
void to_json(json& j, const Fix& v) { j = v.name(); }
void to_json(json& j, const EnvSetting& e) { j = {{"key", e.key}, {"value", e.value}}; }

namespace {

// The fields of RankFacts, shared by the report (wire) and the result: written once (and read once, result_read.cc).
void facts_to_json(json& j, const RankFacts& r) {
  j["rank"] = r.rank;
  j["pid"] = r.pid;
  j["host"] = r.host;
  j["worker"] = r.worker;
  j["cuda_visible_devices"] = r.cuda_visible_devices;
  j["env"] = r.env;
  j["device_index"] = r.device_index;
  j["visible_device_count"] = r.visible_device_count;
  j["bus_id"] = r.bus_id;
  j["uuid"] = r.uuid;
  j["gpu_name"] = r.gpu_name;
  j["nccl_path"] = r.nccl_path;
  j["nccl_version"] = r.nccl_version;
  j["uid_hash"] = r.uid_hash;
  if (r.steady) j["steady"] = *r.steady;
  j["mem"] = r.mem;
  j["overhead_ms"] = r.overhead_ms;
  if (!r.start_source.empty()) j["start_source"] = r.start_source;
  if (!r.launcher.empty()) j["launcher"] = r.launcher;
  if (!r.torch_version.empty()) j["torch_version"] = r.torch_version;
  if (!r.torch_init.empty()) j["torch_init"] = r.torch_init;
  j["dry_run"] = r.dry_run;
  if (!r.store_calls.empty()) j["store_calls"] = r.store_calls;
}

}  // namespace

void to_json(json& j, const RankReport& r) {
  j = json::object();
  facts_to_json(j, r);
  j["phases"] = r.phases;
  j["mono_anchor_ns"] = r.mono_anchor_ns;
  j["real_anchor_ns"] = r.real_anchor_ns;
}

void to_json(json& j, const RankResult& r) {
  j = json::object();
  facts_to_json(j, r);
  j["phases"] = r.phases;
  j["last_phase"] = r.last_phase;
  j["in_phase"] = r.in_phase;
  j["exit"] = r.exit;
  j["stopped_by_lab"] = r.stopped_by_lab;
  j["exited_cleanly"] = r.exited_cleanly;
  j["exit_ms"] = r.exit_ms;
  j["error"] = r.error;
  if (auto ready = r.ready_ms()) j["ready_ms"] = *ready;
  if (r.nccl) j["nccl"] = *r.nccl;
  if (!r.first_collective_calls.empty()) j["first_collective_calls"] = r.first_collective_calls;
  if (!r.first_collective_peer_calls.empty()) j["first_collective_peer_calls"] = r.first_collective_peer_calls;
  if (!r.phase_calls.empty()) j["phase_calls"] = r.phase_calls;
  if (!r.threads.empty()) j["threads"] = r.threads;
}

// ready_ms is derived (written for readers of the JSON, recomputed from the phases when read).
void to_json(json& j, const TrialResult& t) {
  j = {{"index", t.index},
       {"config_id", t.config_id},
       {"repeat", t.repeat},
       {"status", t.status},
       {"message", t.message},
       {"wall_ms", t.wall_ms},
       {"lab_overhead_ms", t.lab_overhead_ms},
       {"ranks", t.ranks},
       {"refusals", t.refusals},
       {"refused", t.refused},
       {"run_id", t.run_id},
       {"config_key", t.config_key}};
  if (auto ready = t.ready_ms()) j["ready_ms"] = *ready;
}

void to_json(json& j, const Config& c) {
  j = {{"id", c.id},   {"key", c.key()},         {"label", c.label()},     {"mode", c.mode},
       {"env", c.env}, {"nccl_lib", c.nccl_lib}, {"nccl_log", c.nccl_log}, {"trace", c.trace}};
  if (!c.launcher.empty()) j["launcher"] = c.launcher;
  j["startup"] = c.startup;
  j["fix"] = c.fix;
  // Written only for more than one node: a run on one host is written as before --nodes existed.
  if (c.nodes > 1) j["nodes"] = c.nodes;
  if (c.link.any()) j["link"] = c.link.name();
}

void to_json(json& j, const BenchSpec& s) {
  j = {{"modes", s.modes},
       {"env", s.env},
       {"visible", s.explicit_lists},
       {"nccl_libs", s.nccl_libs},
       {"nccl_logs", s.nccl_logs},
       {"devices", s.devices},
       {"ranks_per_gpu", s.ranks_per_gpu},
       {"world", s.world},
       {"trials", s.trials},
       {"seed", s.seed},
       {"collective", s.collective},
       {"size_bytes", s.size_bytes},
       {"groups", s.groups},
       {"timeout_s", s.timeout_s},
       {"steady_iters", s.steady_iters},
       {"warmup_iters", s.warmup_iters},
       {"dry_run", s.dry_run},
       {"traces", s.traces},
       {"worker", s.worker},
       {"launcher", s.launcher},
       {"ray_address", s.ray_address},
       {"startups", s.startups},
       {"fixes", s.fixes},
       {"coverage", s.coverage}};
  if (s.nodes != std::vector<int>{1}) j["nodes"] = s.nodes;
  if (s.link.any()) j["link"] = s.link.name();
}

void to_json(json& j, const BenchResults& r) {
  j = {{"schema", kBenchSchema}, {"context", r.context}, {"spec", r.spec},
       {"configs", r.configs},   {"trials", r.trials},   {"summaries", r.summaries}};
}

}  // namespace coldstart
