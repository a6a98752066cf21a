#include "model/result.h"

#include <filesystem>

#include "model/phases.h"
#include "model/summary.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace coldstart {
using nlohmann::json;

// Plain structs: every field, defaults for fields a reader does not find (older files, other writers).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PhaseRecord, name, start_ms, dur_ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PhaseSpan, name, start_ns, end_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Steady, bytes, iters, time_us, algbw_gbps, busbw_gbps)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Memory, total_bytes, used_before_init_bytes, used_after_init_bytes,
                                                used_after_first_bytes, after_init_at)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuInfo, index, name, bus_id, uuid, memory_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NcclLibInfo, requested, path, version)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunContext, schema, run_id, coldstart_version, host, started_at, argv,
                                                driver_version, runtime_version, gpus, nccl, inherited_env, seed,
                                                launcher)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Stats, n, median, min, max, p90, mean)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ThreadState, pid, tid, name, state, wchan, syscall)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PhaseStats, name, stats)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CallTally, count, ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ConfigSummary, config_id, label, status_counts, ready, phases,
                                                busbw_gbps, nccl_mem_init, nccl_mem_first, lazy_connections,
                                                renumbered_ranks, masked_ranks, first_collective_calls)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RankNccl, log, version, comms, cuda_dev, nvml_dev, renumbered,
                                                init_timings_ms, init_connections, lazy_connections, coll_channels,
                                                lazy_connection_span_ms, warnings, warning_count, problem_count)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RankView, devices, device_index)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EnvAxis, key, values)

int RankNccl::lazy_connection_count() const {
  int n = 0;
  for (const auto& [k, v] : lazy_connections) n += v;
  return n;
}

void to_json(json& j, const Groups& g) { j = g.name(); }
void from_json(const json& j, Groups& g) {
  auto parsed = Groups::parse(j.get<std::string>());
  if (!parsed) throw json::other_error::create(501, "not a group plan: " + j.dump(), &j);
  g = *parsed;
}

void to_json(json& j, const Startup& v) { j = v.name(); }
void from_json(const json& j, Startup& v) {
  auto parsed = Startup::parse(j.get<std::string>());
  if (!parsed) throw json::other_error::create(501, "not a start-up: " + j.dump(), &j);
  v = *parsed;
}

void to_json(json& j, const Fix& v) { j = v.name(); }
void from_json(const json& j, Fix& v) {
  auto parsed = Fix::parse(j.get<std::string>());
  if (!parsed) throw json::other_error::create(501, "not a fix: " + j.dump(), &j);
  v = *parsed;
}

void to_json(json& j, const EnvSetting& e) { j = {{"key", e.key}, {"value", e.value}}; }
void from_json(const json& j, EnvSetting& e) {
  e.key = j.at("key").get<std::string>();
  e.value = j.value("value", json()).get<std::optional<std::string>>();
}

namespace {

// The fields of RankFacts, shared by the report (wire) and the result: written once.
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
  if (!r.launcher.empty()) j["launcher"] = r.launcher;
  if (!r.torch_version.empty()) j["torch_version"] = r.torch_version;
  if (!r.torch_init.empty()) j["torch_init"] = r.torch_init;
  j["dry_run"] = r.dry_run;
}

void facts_from_json(const json& j, RankFacts& r) {
  const RankFacts d;
  r.rank = j.value("rank", d.rank);
  r.pid = j.value("pid", d.pid);
  r.host = j.value("host", d.host);
  r.worker = j.value("worker", d.worker);
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
  r.steady = j.value("steady", d.steady);
  r.mem = j.value("mem", d.mem);
  r.overhead_ms = j.value("overhead_ms", d.overhead_ms);
  r.launcher = j.value("launcher", d.launcher);
  r.torch_version = j.value("torch_version", d.torch_version);
  r.torch_init = j.value("torch_init", d.torch_init);
  r.dry_run = j.value("dry_run", d.dry_run);
}

}  // namespace

void to_json(json& j, const RankReport& r) {
  j = json::object();
  facts_to_json(j, r);
  j["phases"] = r.phases;
  j["mono_anchor_ns"] = r.mono_anchor_ns;
  j["real_anchor_ns"] = r.real_anchor_ns;
}
void from_json(const json& j, RankReport& r) {
  facts_from_json(j, r);
  r.phases = j.value("phases", std::vector<PhaseSpan>{});
  r.mono_anchor_ns = j.value("mono_anchor_ns", int64_t{0});
  r.real_anchor_ns = j.value("real_anchor_ns", int64_t{0});
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
  if (!r.threads.empty()) j["threads"] = r.threads;
}
void from_json(const json& j, RankResult& r) {
  const RankResult d;
  facts_from_json(j, r);
  r.phases = j.value("phases", d.phases);
  r.last_phase = j.value("last_phase", d.last_phase);
  r.in_phase = j.value("in_phase", d.in_phase);
  r.exit = j.value("exit", d.exit);
  r.stopped_by_lab = j.value("stopped_by_lab", d.stopped_by_lab);
  r.exited_cleanly = j.value("exited_cleanly", d.exited_cleanly);
  r.exit_ms = j.value("exit_ms", d.exit_ms);
  r.error = j.value("error", d.error);
  r.nccl = j.value("nccl", d.nccl);
  r.first_collective_calls = j.value("first_collective_calls", d.first_collective_calls);
  r.first_collective_peer_calls = j.value("first_collective_peer_calls", d.first_collective_peer_calls);
  r.threads = j.value("threads", d.threads);
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
void from_json(const json& j, TrialResult& t) {
  const TrialResult d;
  t.index = j.value("index", d.index);
  t.config_id = j.value("config_id", d.config_id);
  t.repeat = j.value("repeat", d.repeat);
  t.status = j.value("status", d.status);
  t.message = j.value("message", d.message);
  t.wall_ms = j.value("wall_ms", d.wall_ms);
  t.lab_overhead_ms = j.value("lab_overhead_ms", d.lab_overhead_ms);
  t.ranks = j.value("ranks", d.ranks);
  t.refusals = j.value("refusals", d.refusals);
  t.refused = j.value("refused", static_cast<uint64_t>(t.refusals.size()));
  t.run_id = j.value("run_id", d.run_id);
  t.config_key = j.value("config_key", d.config_key);
}

void to_json(json& j, const Config& c) {
  j = {{"id", c.id},   {"key", c.key()},         {"label", c.label()},     {"mode", c.mode},
       {"env", c.env}, {"nccl_lib", c.nccl_lib}, {"nccl_log", c.nccl_log}, {"trace", c.trace}};
  if (!c.launcher.empty()) j["launcher"] = c.launcher;
  j["startup"] = c.startup;
  j["fix"] = c.fix;
}
void from_json(const json& j, Config& c) {
  const Config d;
  c.id = j.at("id").get<int>();
  c.mode = j.at("mode").get<Mode>();
  c.env = j.value("env", d.env);
  c.nccl_lib = j.value("nccl_lib", d.nccl_lib);
  c.nccl_log = j.value("nccl_log", d.nccl_log);
  c.trace = j.value("trace", d.trace);
  c.launcher = j.value("launcher", d.launcher);
  c.startup = j.value("startup", d.startup);
  c.fix = j.value("fix", d.fix);
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
}
// Defaults come from BenchSpec's own initialisers: one place.
void from_json(const json& j, BenchSpec& s) {
  const BenchSpec d;
  s.modes = j.at("modes").get<std::vector<Mode>>();
  s.env = j.value("env", d.env);
  s.explicit_lists = j.value("visible", d.explicit_lists);
  s.nccl_libs = j.value("nccl_libs", d.nccl_libs);
  s.nccl_logs = j.value("nccl_logs", d.nccl_logs);
  s.devices = j.value("devices", d.devices);
  s.ranks_per_gpu = j.value("ranks_per_gpu", d.ranks_per_gpu);
  s.world = j.value("world", d.world);
  s.trials = j.value("trials", d.trials);
  s.seed = j.value("seed", d.seed);
  s.collective = j.value("collective", d.collective);
  s.size_bytes = j.value("size_bytes", d.size_bytes);
  s.groups = j.value("groups", d.groups);
  s.timeout_s = j.value("timeout_s", d.timeout_s);
  s.steady_iters = j.value("steady_iters", d.steady_iters);
  s.warmup_iters = j.value("warmup_iters", d.warmup_iters);
  s.dry_run = j.value("dry_run", d.dry_run);
  s.traces = j.value("traces", d.traces);
  s.worker = j.value("worker", d.worker);
  s.launcher = j.value("launcher", d.launcher);
  s.ray_address = j.value("ray_address", d.ray_address);
  s.startups = j.value("startups", d.startups);
  s.fixes = j.value("fixes", d.fixes);
  s.coverage = j.value("coverage", d.coverage);
}

void to_json(json& j, const BenchResults& r) {
  j = {{"schema", kBenchSchema}, {"context", r.context}, {"spec", r.spec},
       {"configs", r.configs},   {"trials", r.trials},   {"summaries", r.summaries}};
}
void from_json(const json& j, BenchResults& r) {
  r.context = j.at("context").get<RunContext>();
  r.spec = j.at("spec").get<BenchSpec>();
  r.configs = j.at("configs").get<std::vector<Config>>();
  r.trials = j.at("trials").get<std::vector<TrialResult>>();
  r.summaries = summarize(r.configs, r.trials, r.context.nccl, r.spec.nranks());
}

const PhaseRecord* RankResult::phase(const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

const PhaseRecord* RankResult::ready_phase() const {
  for (const auto& p : phases)
    if (const PhaseInfo* info = phase_info(p.name); info && info->completes_first) return &p;
  return nullptr;
}

std::optional<double> RankResult::ready_ms() const {
  const PhaseRecord* done = ready_phase();
  if (!done) return std::nullopt;
  double start = done->start_ms;
  for (const auto& p : phases) start = std::min(start, p.start_ms);
  return done->start_ms + done->dur_ms - start;
}

std::optional<double> TrialResult::ready_ms() const {
  int r = slowest_rank();
  return r < 0 ? std::nullopt : ranks[static_cast<size_t>(r)].ready_ms();
}

std::optional<double> TrialResult::after_meeting_ms() const {
  if (ranks.empty()) return std::nullopt;
  double met = 0, done = 0;
  for (const auto& r : ranks) {
    const PhaseRecord* meet = r.phase(std::string(phase::sync_init));
    const PhaseRecord* first = r.ready_phase();
    if (!meet || !first) return std::nullopt;
    met = std::max(met, meet->start_ms + meet->dur_ms);
    done = std::max(done, first->start_ms + first->dur_ms);
  }
  return done - met;
}

int TrialResult::slowest_rank() const {
  int slowest = -1;
  double worst = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    auto ready = ranks[i].ready_ms();
    if (!ready) return -1;
    if (slowest < 0 || *ready > worst) slowest = static_cast<int>(i), worst = *ready;
  }
  return slowest;
}

const Stats* ConfigSummary::phase(const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p.stats;
  return nullptr;
}

int ConfigSummary::ok() const {
  auto it = status_counts.find("ok");
  return it == status_counts.end() ? 0 : it->second;
}

int ConfigSummary::total() const {
  int n = 0;
  for (const auto& [k, v] : status_counts) n += v;
  return n;
}

namespace {

void rename(json& obj, const char* from, const char* to) {
  if (obj.is_object() && obj.contains(from)) {
    obj[to] = std::move(obj[from]);
    obj.erase(from);
  }
}

// A rank of schema /1 in the words of /2.
void upgrade_rank_v1(json& r) {
  if (!r.is_object()) return;
  if (r.contains("mem")) {
    json& m = r["mem"];
    rename(m, "total", "total_bytes");
    rename(m, "before_init", "used_before_init_bytes");
    rename(m, "after_init", "used_after_init_bytes");
    rename(m, "after_first", "used_after_first_bytes");
    // The torch probe with lazy init measured "after init" before the communicator existed: that number is void.
    if (r.value("torch_init", "") == "lazy" && m.is_object()) m["used_after_init_bytes"] = -1;
  }
  if (r.contains("nccl")) {
    json& n = r["nccl"];
    rename(n, "masked", "renumbered");
    rename(n, "transports_init", "init_connections");
    rename(n, "transports_lazy", "lazy_connections");
    rename(n, "lazy_span_ms", "lazy_connection_span_ms");
  }
  r["stopped_by_lab"] = r.value("exit", "") == "stopped by the lab";
  r["exited_cleanly"] = r.value("exit", "") == "exit 0";
  if (r.contains("torch_version")) r["worker"] = "torch";
}

// A trial line or results file of schema /1, rewritten in place into /2 (summaries are recomputed, not upgraded).
void upgrade_trial_v1(json& t) {
  for (auto& r : t["ranks"]) upgrade_rank_v1(r);
}

}  // namespace

TrialResult trial_from_json(const json& j) {
  json t = j;
  // A /1 line has no "schema"; a /2 one carries no mem.total either but has mem.total_bytes or no mem at all.
  bool v1 = false;
  for (const auto& r : t.value("ranks", json::array()))
    v1 = v1 || (r.contains("mem") && r["mem"].contains("before_init")) ||
         (r.contains("nccl") && r["nccl"].contains("masked"));
  if (v1) upgrade_trial_v1(t);
  return t.get<TrialResult>();
}

BenchResults bench_results_from_json(const json& j, const std::string& what) {
  if (j.is_object() && j.contains("traceEvents"))
    throw InputError(what + ": a Perfetto/Chrome trace, not a bench result; give the results.json that bench wrote");
  if (!j.is_object() || !j.contains("schema"))
    throw InputError(what +
                     ": not a coldstart bench result (no \"schema\" field); give a results.json written by bench");
  std::string schema = j.at("schema").is_string() ? j.at("schema").get<std::string>() : "?";
  if (schema.starts_with("coldstart.") && !schema.starts_with("coldstart.bench/")) {
    // Name the command that writes files of this schema.
    std::string from = "another coldstart command";
    for (auto [prefix, writer] : {std::pair{"coldstart.doctor/", "coldstart doctor --json"},
                                  std::pair{"coldstart.facts/", "coldstart doctor --json"},
                                  std::pair{"coldstart.nccllog/", "coldstart nccllog --json"},
                                  std::pair{"coldstart.budget/", "coldstart trace"}})
      if (schema.starts_with(prefix)) from = writer;
    throw InputError(what + ": a " + schema + " file (from " + from +
                     "), not a bench result; give the results.json that bench wrote");
  }
  if (schema != kBenchSchema && schema != kBenchSchemaV1)
    throw InputError(what + ": schema " + schema + " is not " + kBenchSchema + " (or " + kBenchSchemaV1 +
                     "); use the coldstart version that wrote it, or re-run bench");
  BenchResults r;
  try {
    json doc = j;
    if (schema == kBenchSchemaV1)
      for (auto& t : doc["trials"]) upgrade_trial_v1(t);
    doc["context"]["schema"] = kBenchSchema;
    r = doc.get<BenchResults>();
  } catch (const json::exception& e) {
    throw InputError(what + ": malformed bench result (" + e.what() + ")");
  } catch (const InputError& e) {
    throw InputError(what + ": malformed bench result (" + e.what() + ")");
  }
  // Trials must point at configurations the file has, or nothing can be drawn from them.
  if (r.configs.empty()) throw InputError(what + ": no configurations; give a results.json that bench wrote");
  for (const auto& t : r.trials)
    if (t.config_id < 0 || static_cast<size_t>(t.config_id) >= r.configs.size())
      throw InputError(what + ": trial " + std::to_string(t.index) + " names configuration " +
                       std::to_string(t.config_id) + ", which the file does not have (it has " +
                       std::to_string(r.configs.size()) + "); the file is damaged");
  for (size_t i = 0; i < r.configs.size(); ++i)
    if (r.configs[i].id != static_cast<int>(i))
      throw InputError(what + ": configuration " + std::to_string(i) + " has id " + std::to_string(r.configs[i].id) +
                       "; the file is damaged");
  return r;
}

BenchResults load_bench_results(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(path + ": a folder; give " + (fs::path(path) / "results.json").string() +
                     " (the results bench wrote there)");
  std::string text;
  try {
    text = read_file_limited(path, kMaxResultsBytes);
  } catch (const RuntimeError& e) {
    throw InputError(std::string(e.what()) + "; give a readable results.json");
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    // One trial per line: bench's results.jsonl, not the run.
    auto nl = text.find('\n');
    json first = json::parse(text.substr(0, nl), nullptr, false);
    if (nl != std::string::npos && first.is_object() && first.contains("ranks"))
      throw InputError(path + ": one trial per line (bench's results.jsonl); give results.json from the same folder");
    throw InputError(path + ": not valid JSON (truncated or corrupt); give a complete results.json");
  }
  if (j.is_object() && j.value("schema", "") == "coldstart.run/1")
    throw InputError(path +
                     ": bench's run settings (run.json), not its results; give results.json from the same folder");
  return bench_results_from_json(j, path);
}

std::optional<RankReport> parse_report(const json& j, std::string* error) {
  try {
    if (!j.is_object()) throw json::type_error::create(302, "the report is not an object", &j);
    return j.get<RankReport>();
  } catch (const json::exception& e) {
    *error = std::string("the rank sent a malformed report (") + e.what() + ")";
    return std::nullopt;
  }
}

int64_t clock_shift_ns(const RankReport& report, int64_t clock_offset_ns, int64_t server_real_minus_mono_ns) {
  int64_t real_minus_mono = report.real_anchor_ns - report.mono_anchor_ns;
  return real_minus_mono - clock_offset_ns - server_real_minus_mono_ns;
}

RankResult rank_result_from_report(const RankReport& report, int64_t t0_ns, int64_t shift_ns) {
  RankResult r;
  static_cast<RankFacts&>(r) = report;
  for (const auto& p : report.phases) {
    int64_t s = p.start_ns + shift_ns, e = p.end_ns + shift_ns;
    r.phases.push_back({p.name, ns_to_ms(s - t0_ns), ns_to_ms(e - s)});
  }
  return r;
}

}  // namespace coldstart
