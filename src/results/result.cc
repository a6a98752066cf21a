#include "results/result.h"

#include <nlohmann/json.hpp>

#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace coldstart {
using nlohmann::json;

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PhaseRecord, name, start_ms, dur_ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Steady, bytes, iters, time_us, algbw_gbps, busbw_gbps)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Memory, total, before_init, after_init, after_first, after_init_at)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuInfo, index, name, bus_id, uuid, memory_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NcclLibInfo, requested, path, version)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunContext, schema, coldstart_version, host, started_at, argv,
                                                driver_version, runtime_version, gpus, nccl, inherited_env, seed,
                                                launcher)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Stats, n, median, min, max, p90, mean)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PhaseStats, name, stats)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CallTally, count, ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ThreadState, pid, tid, name, state, wchan, syscall)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ConfigSummary, config_id, label, status_counts, phases, busbw_gbps,
                                                mem_after_init, mem_after_first, lazy_connections, masked_ranks,
                                                first_collective_calls)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RankNccl, log, version, comms, cuda_dev, nvml_dev, masked,
                                                init_timings_ms, transports_init, transports_lazy, coll_channels,
                                                lazy_span_ms, warnings, warning_count, problem_count)

int RankNccl::lazy_count() const {
  int n = 0;
  for (const auto& [k, v] : transports_lazy) n += v;
  return n;
}

void to_json(json& j, const RankResult& r) {
  j = {{"rank", r.rank},
       {"pid", r.pid},
       {"host", r.host},
       {"cuda_visible_devices", r.cuda_visible_devices},
       {"env", r.env},
       {"device_index", r.device_index},
       {"visible_device_count", r.visible_device_count},
       {"bus_id", r.bus_id},
       {"uuid", r.uuid},
       {"gpu_name", r.gpu_name},
       {"nccl_path", r.nccl_path},
       {"nccl_version", r.nccl_version},
       {"uid_hash", r.uid_hash},
       {"phases", r.phases},
       {"last_phase", r.last_phase},
       {"in_phase", r.in_phase},
       {"mem", r.mem},
       {"overhead_ms", r.overhead_ms},
       {"exit", r.exit},
       {"exit_ms", r.exit_ms},
       {"error", r.error},
       {"dry_run", r.dry_run}};
  if (r.steady) j["steady"] = *r.steady;
  if (r.nccl) j["nccl"] = *r.nccl;
  if (!r.first_collective_calls.empty()) j["first_collective_calls"] = r.first_collective_calls;
  if (!r.first_collective_peer_calls.empty()) j["first_collective_peer_calls"] = r.first_collective_peer_calls;
  if (!r.threads.empty()) j["threads"] = r.threads;
  if (!r.launcher.empty()) j["launcher"] = r.launcher;
  if (!r.torch_version.empty()) j["torch_version"] = r.torch_version, j["torch_init"] = r.torch_init;
}

void from_json(const json& j, RankResult& r) {
  RankResult d;
  r.rank = j.value("rank", d.rank);
  r.pid = j.value("pid", d.pid);
  r.host = j.value("host", d.host);
  r.cuda_visible_devices = j.value("cuda_visible_devices", d.cuda_visible_devices);
  r.env = j.value("env", d.env);
  r.device_index = j.value("device_index", d.device_index);
  r.visible_device_count = j.value("visible_device_count", d.visible_device_count);
  r.bus_id = normalize_bus_id(j.value("bus_id", d.bus_id));
  r.uuid = j.value("uuid", d.uuid);
  r.gpu_name = j.value("gpu_name", d.gpu_name);
  r.nccl_path = j.value("nccl_path", d.nccl_path);
  r.nccl_version = j.value("nccl_version", d.nccl_version);
  r.uid_hash = j.value("uid_hash", d.uid_hash);
  r.phases = j.value("phases", d.phases);
  r.last_phase = j.value("last_phase", d.last_phase);
  r.in_phase = j.value("in_phase", d.in_phase);
  r.mem = j.value("mem", d.mem);
  r.overhead_ms = j.value("overhead_ms", d.overhead_ms);
  r.exit = j.value("exit", d.exit);
  r.exit_ms = j.value("exit_ms", d.exit_ms);
  r.error = j.value("error", d.error);
  r.dry_run = j.value("dry_run", d.dry_run);
  if (j.contains("steady")) r.steady = j.at("steady").get<Steady>();
  if (j.contains("nccl")) r.nccl = j.at("nccl").get<RankNccl>();
  r.first_collective_calls = j.value("first_collective_calls", d.first_collective_calls);
  r.first_collective_peer_calls = j.value("first_collective_peer_calls", d.first_collective_peer_calls);
  r.threads = j.value("threads", d.threads);
  r.launcher = j.value("launcher", d.launcher);
  r.torch_version = j.value("torch_version", d.torch_version);
  r.torch_init = j.value("torch_init", d.torch_init);
  // Files written before after_init_at existed: the torch probe with lazy init measured "after init" before the
  // communicator existed (it read the memory before init), so that number says nothing.
  if (r.mem.after_init_at.empty() && r.torch_init == "lazy") r.mem.after_init = -1;
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TrialResult, index, config_id, repeat, status, message, wall_ms,
                                                lab_overhead_ms, ranks, refusals)

void to_json(json& j, const EnvSetting& e) { j = {{"key", e.key}, {"value", e.value ? json(*e.value) : json()}}; }
void from_json(const json& j, EnvSetting& e) {
  e.key = j.at("key").get<std::string>();
  if (j.contains("value") && !j.at("value").is_null()) e.value = j.at("value").get<std::string>();
}

void to_json(json& j, const Config& c) {
  j = {{"id", c.id},      {"label", c.label()},     {"mode", mode_name(c.mode)},
       {"env", c.env},    {"nccl_lib", c.nccl_lib}, {"nccl_log", nccl_log_name(c.nccl_log)},
       {"trace", c.trace}};
  if (!c.launcher.empty()) j["launcher"] = c.launcher;
}
void from_json(const json& j, Config& c) {
  c.id = j.at("id").get<int>();
  c.mode = parse_mode(j.at("mode").get<std::string>());
  c.env = j.value("env", std::vector<EnvSetting>{});
  c.nccl_lib = j.value("nccl_lib", std::string());
  c.nccl_log = parse_nccl_log(j.value("nccl_log", std::string("off")));
  c.trace = j.value("trace", false);
  c.launcher = j.value("launcher", std::string());
}

void to_json(json& j, const BenchSpec& s) {
  json modes = json::array();
  for (Mode m : s.modes) modes.push_back(mode_name(m));
  json env = json::array();
  for (const auto& a : s.env) {
    json values = json::array();
    for (const auto& v : a.values) values.push_back(v ? json(*v) : json());
    env.push_back({{"key", a.key}, {"values", values}});
  }
  json nccl_logs = json::array();
  for (NcclLog l : s.nccl_logs) nccl_logs.push_back(nccl_log_name(l));
  json visible = json::array();
  for (const auto& v : s.explicit_lists) visible.push_back({{"devices", v.devices}, {"device_index", v.device_index}});
  j = {{"modes", modes},
       {"env", env},
       {"visible", visible},
       {"nccl_libs", s.nccl_libs},
       {"nccl_logs", nccl_logs},
       {"devices", s.devices},
       {"trials", s.trials},
       {"seed", s.seed},
       {"collective", collective_name(s.collective)},
       {"size_bytes", s.size_bytes},
       {"groups", s.groups.name()},
       {"timeout_s", s.timeout_s},
       {"steady_iters", s.steady_iters},
       {"warmup_iters", s.warmup_iters},
       {"dry_run", s.dry_run},
       {"traces", s.traces},
       {"worker", s.worker},
       {"launcher", s.launcher},
       {"ray_address", s.ray_address}};
}
void from_json(const json& j, BenchSpec& s) {
  s.modes.clear();
  for (const auto& m : j.at("modes")) s.modes.push_back(parse_mode(m.get<std::string>()));
  s.env.clear();
  for (const auto& a : j.value("env", json::array())) {
    EnvAxis axis{a.at("key").get<std::string>(), {}};
    for (const auto& v : a.at("values"))
      axis.values.push_back(v.is_null() ? std::nullopt : std::optional<std::string>(v.get<std::string>()));
    s.env.push_back(axis);
  }
  s.explicit_lists.clear();
  for (const auto& v : j.value("visible", json::array()))
    s.explicit_lists.push_back({v.at("devices").get<std::vector<std::string>>(), v.value("device_index", -1)});
  s.nccl_libs = j.value("nccl_libs", std::vector<std::string>{});
  s.nccl_logs.clear();
  for (const auto& l : j.value("nccl_logs", json::array({"off"})))
    s.nccl_logs.push_back(parse_nccl_log(l.get<std::string>()));
  s.devices = j.value("devices", std::vector<std::string>{});
  s.trials = j.value("trials", 5);
  s.seed = j.value("seed", uint64_t{0});
  s.collective = parse_collective(j.value("collective", std::string("all_reduce")));
  s.size_bytes = j.value("size_bytes", uint64_t{64} << 20);
  s.groups = parse_groups(j.value("groups", std::string("world")));
  s.timeout_s = j.value("timeout_s", 120.0);
  s.steady_iters = j.value("steady_iters", 20);
  s.warmup_iters = j.value("warmup_iters", 5);
  s.dry_run = j.value("dry_run", false);
  s.worker = j.value("worker", std::string("nccl"));
  s.launcher = j.value("launcher", std::string("lab"));
  s.ray_address = j.value("ray_address", std::string());
  s.traces = j.value("traces", std::vector<bool>{false});
}

const PhaseRecord* RankResult::phase(const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

const Stats* ConfigSummary::phase(const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p.stats;
  return nullptr;
}

json to_json(const TrialResult& t) { return json(t); }
TrialResult trial_from_json(const json& j) { return j.get<TrialResult>(); }
json config_to_json(const Config& c) { return json(c); }
json spec_to_json(const BenchSpec& s) { return json(s); }
BenchSpec spec_from_json(const json& j) { return j.get<BenchSpec>(); }
Config config_from_json(const json& j) { return j.get<Config>(); }

json to_json(const BenchResults& r) {
  return {{"schema", kBenchSchema}, {"context", r.context}, {"spec", r.spec},
          {"configs", r.configs},   {"trials", r.trials},   {"summaries", r.summaries}};
}

BenchResults bench_results_from_json(const json& j, const std::string& what) {
  if (j.is_object() && j.contains("traceEvents"))
    throw InputError(what + ": a Perfetto/Chrome trace, not a bench result; give the results.json that bench wrote");
  if (!j.is_object() || !j.contains("schema"))
    throw InputError(what +
                     ": not a coldstart bench result (no \"schema\" field); give a results.json written by bench");
  std::string schema = j.at("schema").is_string() ? j.at("schema").get<std::string>() : "?";
  if (schema.starts_with("coldstart.") && !schema.starts_with("coldstart.bench/"))
    throw InputError(what + ": a " + schema +
                     " file (from coldstart trace or nccllog), not a bench result; give the "
                     "results.json that bench wrote");
  if (schema != kBenchSchema)
    throw InputError(what + ": schema " + schema + " is not " + kBenchSchema +
                     "; use the coldstart version that wrote it, or re-run bench");
  try {
    BenchResults r;
    r.context = j.at("context").get<RunContext>();
    r.spec = j.at("spec").get<BenchSpec>();
    r.configs = j.at("configs").get<std::vector<Config>>();
    r.trials = j.at("trials").get<std::vector<TrialResult>>();
    r.summaries = j.value("summaries", std::vector<ConfigSummary>{});
    return r;
  } catch (const json::exception& e) {
    throw InputError(what + ": malformed bench result (" + e.what() + ")");
  } catch (const InputError& e) {
    throw InputError(what + ": malformed bench result (" + e.what() + ")");
  }
}

BenchResults load_bench_results(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const RuntimeError& e) {
    throw InputError(std::string(e.what()) + "; give a readable results.json");
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded())
    throw InputError(path + ": not valid JSON (truncated or corrupt); give a complete results.json");
  return bench_results_from_json(j, path);
}

int64_t wire_clock_shift_ns(const json& wire, int64_t clock_offset_ns, int64_t server_real_minus_mono_ns) {
  int64_t real_minus_mono = wire.value("real_anchor_ns", int64_t{0}) - wire.value("mono_anchor_ns", int64_t{0});
  return real_minus_mono - clock_offset_ns - server_real_minus_mono_ns;
}

RankResult rank_result_from_wire(const json& wire, int64_t t0_ns, int64_t shift_ns) {
  // The wire form is the result form with absolute phase times; convert those and read the rest as usual.
  json j = wire;
  json phases = json::array();
  for (const auto& p : wire.value("phases", json::array())) {
    int64_t s = p.value("start_ns", int64_t{0}) + shift_ns, e = p.value("end_ns", int64_t{0}) + shift_ns;
    phases.push_back(
        {{"name", p.value("name", std::string("?"))}, {"start_ms", ns_to_ms(s - t0_ns)}, {"dur_ms", ns_to_ms(e - s)}});
  }
  j["phases"] = phases;
  return j.get<RankResult>();
}

}  // namespace coldstart
