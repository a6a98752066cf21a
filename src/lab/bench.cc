#include "lab/bench.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "coord/address.h"
#include "coord/server.h"
#include "gpu/fatbin.h"
#include "gpu/nccl.h"
#include "lab/capacity.h"
#include "lab/hang.h"
#include "lab/matrix.h"
#include "lab/nodes.h"
#include "lab/one_gpu.h"
#include "lab/visibility.h"
#include "launch/python.h"
#include "launch/trial.h"
#include "model/phases.h"
#include "model/summary.h"
#include "model/validate.h"
#include "ncclbuild/cache.h"
#include "nccllog/facts.h"
#include "nccllog/failures.h"
#include "nccllog/parser.h"
#include "trace/inject.h"
#include "trace/merge.h"
#include "util/clock.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/random.h"
#include "util/strings.h"
#include "worker/args.h"

namespace coldstart::lab {
namespace {
using nlohmann::json;

// Variables that shape NCCL's and CUDA's behaviour, recorded with every run.
std::map<std::string, std::string> relevant_env() {
  return environment([](std::string_view key) {
    for (std::string_view prefix : {"NCCL_", "CUDA_", "COLDSTART_NCCL_LIB", "LD_LIBRARY_PATH", "TORCH_NCCL", "RAY_"})
      if (starts_with(key, prefix)) return true;
    return false;
  });
}

std::vector<std::string> worker_args(const BenchSpec& spec, const Config& c, const Visibility& v, int rank,
                                     int64_t trial, const std::string& coord, const std::string& nccl_path) {
  worker::WorkerArgs a;
  a.rank = rank;
  a.nranks = spec.nranks();
  a.device = v.device_index;
  a.trial = trial;
  a.coord = coord;
  a.collective = name_of(spec.collective);
  a.size = spec.size_bytes;
  a.groups = spec.groups.name();
  a.iters = spec.steady_iters;
  a.warmup = spec.warmup_iters;
  // Ranks wait on the coordinator longer than the watchdog allows the trial, so that the lab, not a rank giving up at
  // the same moment, ends a hung trial.
  a.timeout_s = spec.timeout_s + 30;
  a.nccl_lib = nccl_path;
  a.dry_run = spec.dry_run;
  a.startup = c.startup.name();
  a.prewarm = c.fix.kind == Fix::Kind::prewarm;
  a.split_share = c.fix.kind == Fix::Kind::split_share;
  a.coverage = spec.coverage;
  return a.to_argv();
}

// A rank that sent no result: what its streamed events tell.
RankResult partial_rank(int rank, const coord::RankSlot& slot, int64_t t0_ns) {
  RankResult r;
  r.rank = rank;
  r.pid = slot.pid;
  r.host = slot.host;
  for (const auto& ev : slot.events)
    if (ev.value("state", "") == "end") {
      int64_t s = ev.value("start_ns", int64_t{0}), e = ev.value("ns", int64_t{0});
      r.phases.push_back({ev.value("name", "?"), ns_to_ms(s - t0_ns), ns_to_ms(e - s)});
    }
  r.error = slot.error;
  return r;
}

// Wall time minus the slowest rank's own span (from its spawn to its exit, as the lab saw them).
double lab_overhead_ms(const launch::TrialRun& run) {
  int64_t slowest = 0;
  for (const auto& e : run.exits)
    if (e.spawned_ns && e.reaped_ns) slowest = std::max(slowest, e.reaped_ns - e.spawned_ns);
  return ns_to_ms(run.t_end_ns - run.t0_ns - slowest);
}

// A rank's output (its stdout and stderr, appended), which also holds its NCCL log: NCCL writes to the standard
// output when no file is named, so the log opens no fd in the rank it measures.
std::string rank_output_path(const std::string& trial_dir, int rank) {
  return fmt::format("{}/rank-{}.log", trial_dir, rank);
}

}  // namespace

std::vector<std::string> resolve_devices(const std::vector<std::string>& given, int gpus, const gpu::CudaFacts& cuda,
                                         bool dry_run) {
  std::vector<std::string> all = given;
  std::string source = "--devices";
  if (all.empty()) {
    const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
    if (cvd && *cvd && (cuda.available || dry_run)) {
      // A dry run without CUDA takes the list as given: the plan for the GPUs the lab would be shown.
      all = parse_device_list(cvd, "CUDA_VISIBLE_DEVICES");
      if (cuda.available) all.resize(std::min(all.size(), cuda.gpus.size()));
      source = "CUDA_VISIBLE_DEVICES";
    } else if (cuda.available) {
      for (const auto& g : cuda.gpus) all.push_back(std::to_string(g.index));
      source = "the GPUs CUDA sees";
    } else if (dry_run) {
      for (int i = 0; i < (gpus > 0 ? gpus : 2); ++i) all.push_back(std::to_string(i));
      source = "--gpus";
    }
  }
  if (gpus < 0) throw InputError("--gpus must be at least 1");
  if (gpus > 0) {
    if (static_cast<size_t>(gpus) > all.size())
      throw InputError(fmt::format("--gpus {}: only {} GPU(s) available ({} from {}); lower --gpus", gpus, all.size(),
                                   join(all, ","), source));
    all.resize(static_cast<size_t>(gpus));
  }
  if (all.empty()) throw InputError("no GPUs to run on; give --devices or --gpus");
  return all;
}

RunContext new_run_context(const std::vector<std::string>& argv) {
  RunContext ctx;
  ctx.coldstart_version = COLDSTART_VERSION;
  ctx.host = hostname();
  ctx.started_at = format_now("%Y-%m-%dT%H:%M:%SZ", true);
  ctx.argv = argv;
  ctx.inherited_env = relevant_env();
  return ctx;
}

bool name_unique_id_mixup(TrialResult& t) {
  std::set<std::string> ids;
  for (const auto& rr : t.ranks)
    if (!rr.uid_hash.empty()) ids.insert(rr.uid_hash);
  if (ids.size() < 2) return false;
  std::vector<std::string> who;
  for (const auto& rr : t.ranks)
    who.push_back(fmt::format("rank {} {}", rr.rank, rr.uid_hash.empty() ? "?" : rr.uid_hash));
  t.status = TrialStatus::error;
  t.message = "ranks were handed different NCCL unique ids (" + join(who, ", ") + ")";
  return true;
}

namespace {

// How ranks are started: the worker command, the coordinator address they are told, and for Python workers or Ray
// ranks, the Python side and Ray.
struct Starter {
  std::vector<std::string> worker_cmd;
  std::string coord;  // HOST:PORT the ranks reach the coordinator at
  std::optional<launch::PythonSide> python;
  std::string ray_address;
};

// One rank's process: the worker command (for a Ray rank, wrapped in its actor's driver), the environment of its
// launch model and configuration (with NCCL's log and the tracer where asked), and its output file.

SpawnSpec rank_spawn(const BenchSpec& spec, const Config& c, int r, int64_t trial, const std::string& trial_dir,
                     const coord::Server& server, const Starter& starter, const std::string& nccl_path,
                     const NodeLab* nodes) {
  Visibility v = visibility_for({c.mode, spec.explicit_lists}, r, spec.devices, spec.ranks_per_gpu);
  std::vector<std::pair<std::string, std::string>> set{{"COLDSTART_TOKEN", server.token()}};
  // Several ranks on one GPU: NCCL (>= 2.30) refuses them unless asked; the option is recorded in the spec.
  if (spec.ranks_per_gpu > 1) set.emplace_back("NCCL_MULTI_RANK_GPU_ENABLE", "1");
  std::vector<std::string> unset_keys;
  // --nodes: the rank runs on its node (its network namespace and hostname), and NCCL's bootstrap, its socket
  // transport and Gloo use the node's link. NCCL_HOSTID would make every node one host again. (--env still wins.)
  const Node* node = nullptr;
  if (c.nodes > 1 && nodes) {
    node = &nodes->nodes().at(static_cast<size_t>(node_of_rank(r, spec.nranks(), c.nodes)));
    add_node_env(*node, set, unset_keys);
  }
  // A Ray rank's visibility is Ray's to set, in the actor.
  if (is_ray_mode(c.mode))
    unset_keys.push_back("CUDA_VISIBLE_DEVICES");
  else
    set.emplace_back("CUDA_VISIBLE_DEVICES", v.cuda_visible_devices);
  if (starter.python) set.push_back(starter.python->pythonpath_env());
  std::vector<EnvSetting> env = c.env;
  for (const auto& e : c.fix.env())  // a configuration read from a file written before its env held the fix's
    if (std::none_of(env.begin(), env.end(), [&](const EnvSetting& x) { return x.key == e.key; })) env.push_back(e);
  for (const auto& e : env) {
    if (e.value)
      set.emplace_back(e.key, *e.value);
    else
      unset_keys.push_back(e.key);
  }
  auto user_set = [&](const std::string& key) {
    if (std::getenv(key.c_str())) return true;
    return std::any_of(env.begin(), env.end(), [&](const EnvSetting& e) { return e.key == key; });
  };
  auto log_env = nccllog::nccl_log_env(c.nccl_log, "", user_set);
  set.insert(set.end(), log_env.begin(), log_env.end());
  // A Python rank's C stdio is fully buffered into a file: unbuffered, each NCCL line is written as it is logged, and
  // a rank killed at its deadline leaves its log. (The lab's own worker line-buffers its output itself.)
  if (c.nccl_log != NcclLog::off && starter.python && !user_set("PYTHONUNBUFFERED"))
    set.emplace_back("PYTHONUNBUFFERED", "1");
  if (c.trace) {
    auto t = trace::trace_env(trial_dir, "", NcclLog::off, user_set);
    set.insert(set.end(), t.begin(), t.end());
  }
  SpawnSpec s;
  s.output_path = rank_output_path(trial_dir, r);
  if (is_ray_mode(c.mode)) {  // the actor appends the worker's output to the rank's, as the lab does
    s.argv = {starter.python->python, "-m",       "coldstart.ray_rank", "--address",
              starter.ray_address,    "--output", s.output_path};
    if (c.mode == Mode::ray_noset) s.argv.push_back("--noset");
    s.argv.push_back("--");
  }
  s.argv.insert(s.argv.end(), starter.worker_cmd.begin(), starter.worker_cmd.end());
  auto args = worker_args(spec, c, v, r, trial, starter.coord, nccl_path);
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.env = make_env(set, unset_keys);
  if (node) {
    s.netns = node->netns_path;
    s.hostname = node->hostname;
  }
  return s;
}

// The cause a failed trial's message, its ranks' errors or their NCCL warnings name in words the casebook knows
// (nccllog/failures.h), or "".
std::string known_cause(const TrialResult& t) {
  if (std::string c = nccllog::known_failure(t.message); !c.empty()) return c;
  for (const RankResult& r : t.ranks) {
    if (std::string c = nccllog::known_failure(r.error); !c.empty()) return c;
    if (r.nccl)
      for (const std::string& warning : r.nccl->warnings)
        if (std::string c = nccllog::known_failure(warning); !c.empty()) return c;
  }
  return "";
}

// A trial's result: each rank's own report (or, for a rank that sent none, what its events told), how it ended,
// its NCCL log and, when traced, the CUDA calls of its first collective.
TrialResult collect_trial(const TrialPlan& tp, const Config& c, const launch::TrialRun& run,
                          const coord::Server& server, const std::string& trial_dir) {
  TrialResult t;
  t.index = tp.index;
  t.config_id = tp.config_id;
  t.repeat = tp.repeat;
  t.status = run.status;
  t.message = run.message;
  t.wall_ms = ns_to_ms(run.t_end_ns - run.t0_ns);
  t.refusals = server.refusals();
  t.refused = server.refusal_count();
  for (int r = 0; r < server.nranks(); ++r) {
    const auto& slot = server.rank(r);
    std::string malformed;
    std::optional<RankReport> report = slot.done ? parse_report(slot.result, &malformed) : std::nullopt;
    RankResult rr = report ? rank_result_from_report(*report, run.t0_ns) : partial_rank(r, slot, run.t0_ns);
    if (!malformed.empty()) rr.error = malformed;
    rr.last_phase = slot.phase;
    rr.in_phase = slot.in_phase;
    const launch::RankExit& ex = run.exits[static_cast<size_t>(r)];
    rr.exit = ex.how;
    rr.stopped_by_lab = ex.stopped;
    rr.exited_cleanly = ex.ended && WIFEXITED(ex.wait_status) && WEXITSTATUS(ex.wait_status) == 0;
    rr.threads = ex.threads;
    // Process teardown after the last phase (context destruction, NCCL's exit handlers).
    if (!rr.phases.empty() && ex.reaped_ns) {
      const PhaseRecord& last = rr.phases.back();
      rr.exit_ms = ns_to_ms(ex.reaped_ns - run.t0_ns) - (last.start_ms + last.dur_ms);
    }
    if (rr.error.empty()) rr.error = slot.error;
    if (std::string log = rank_output_path(trial_dir, r); c.nccl_log != NcclLog::off && std::filesystem::exists(log))
      rr.nccl = nccllog::rank_facts(nccllog::parse_files({log}), log);
    t.ranks.push_back(std::move(rr));
  }
  if (c.trace) trace::attribute_phases(trace::read_trace_dir(trial_dir), run.t0_ns, t.ranks);
  if (t.status == TrialStatus::error || t.status == TrialStatus::hang)
    if (std::string cause = known_cause(t); !cause.empty())
      t.message += std::string(t.message.empty() ? "" : "; ") + "known cause: " + cause;
  if (!name_unique_id_mixup(t) && t.status == TrialStatus::hang) {
    if (std::string where = where_hung_ranks_were(t.ranks); !where.empty()) t.message += " (" + where + ")";
  }
  // Connections the coordinator turned away during the trial: its timing may have been disturbed by them.
  if (t.refused > 0)
    t.message += std::string(t.message.empty() ? "" : "; ") +
                 fmt::format("{} connection(s) refused during the trial (timing may be disturbed; first: {})",
                             t.refused, t.refusals.empty() ? "?" : t.refusals.front());
  return t;
}

}  // namespace

std::map<int, TrialResult> finished_trials(const std::string& jsonl, const std::string& run_id, const BenchSpec& spec,
                                           const std::vector<Config>& configs) {
  std::map<int, TrialResult> out;
  if (!std::filesystem::exists(jsonl)) return out;
  auto lines =
      split(read_file_limited(jsonl, kMaxResultsBytes, "give the --out folder of a bench run to finish"), '\n');
  size_t last = lines.size();
  while (last > 0 && trim(lines[last - 1]).empty()) --last;
  for (size_t i = 0; i < last; ++i) {
    const std::string where = jsonl + ":" + std::to_string(i + 1);
    if (trim(lines[i]).empty()) continue;
    json j = json::parse(lines[i], nullptr, false);
    if (j.is_discarded()) {
      if (i + 1 == last) continue;  // the last line, torn by a crash mid-write: that trial runs again
      throw InputError(where + ": not a whole JSON line; the file is damaged (move the line out, or start a new run)");
    }
    TrialResult t;
    try {
      t = trial_from_json(j);
    } catch (const std::exception& e) {
      throw InputError(where + ": a line of the wrong shape (" + e.what() + "); move it out, or start a new run");
    }
    if (t.run_id != run_id)
      throw InputError(where + ": a trial of another run (" + (t.run_id.empty() ? "no run id" : "run " + t.run_id) +
                       "; this run is " + run_id + "); results.jsonl holds one run's trials only");
    if (t.config_id < 0 || static_cast<size_t>(t.config_id) >= configs.size() ||
        configs[static_cast<size_t>(t.config_id)].key() != t.config_key)
      throw InputError(where + ": trial " + std::to_string(t.index) + " was of configuration '" + t.config_key +
                       "', which this run does not have there; the file is damaged");
    if (auto bad = check_trial(t, spec, configs, "trial"))
      throw InputError(where + ": " + bad->text() + "; the file is damaged (move the line out, or start a new run)");
    if (t.status == TrialStatus::interrupted) continue;
    const int index = t.index;
    if (!out.emplace(index, std::move(t)).second)
      throw InputError(where + ": trial " + std::to_string(index) +
                       " again; the file is damaged (move the line out, or start a new run)");
  }
  return out;
}

RunSettings load_run_settings(const std::string& dir) {
  const std::string path = dir + "/run.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw InputError("--resume " + dir + ": no run.json there; give the --out folder of a bench run to finish");
  std::string text;
  try {
    text = read_file_limited(path, kMaxRunSettingsBytes, "give the --out folder of a bench run to finish");
  } catch (const RuntimeError& e) {
    throw InputError("--resume " + dir + ": " + e.what());
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || j.value("schema", "") != kRunSchema || !j.contains("spec"))
    throw InputError("--resume " + dir + ": run.json is not a " + std::string(kRunSchema) +
                     " file (corrupt, or from another coldstart version)");
  if (!j.contains("run_id") || !j["run_id"].is_string())
    throw InputError("--resume " + dir + ": run.json has no run id (an older coldstart wrote it); start a new run");
  RunSettings settings;
  try {
    settings = {j["spec"].get<BenchSpec>(), j["run_id"].get<std::string>()};
  } catch (const std::exception& e) {
    throw InputError("--resume " + dir + ": run.json has a malformed spec (" + e.what() + ")");
  }
  if (auto bad = check_spec(settings.spec, "spec"))
    throw InputError("--resume " + dir + ": run.json's " + bad->text() + "; the file is damaged (start a new run)");
  return settings;
}

bool all_ok(const BenchResults& r) {
  return std::all_of(r.trials.begin(), r.trials.end(), [](const TrialResult& t) { return t.ok(); });
}

namespace {

// Everything decided before a process starts: the node, the devices, the configurations, their libraries, the
// order of trials, and the output folder (with run.json, or what a resumed run had finished).
struct Prepared {
  BenchResults res;
  std::vector<TrialPlan> plan;
  std::map<std::string, std::string> nccl_path;  // --nccl-lib as given -> the library resolved
  std::map<int, TrialResult> finished;           // --resume: trials already on disk
  std::string jsonl;
};

// A library's GPU code beside the GPUs the run saw (a file without fat binaries, or one that does not read, leaves
// it unknown, and the table's note says what init.kernels could be).
void read_kernels(NcclLibInfo& info, const std::vector<GpuInfo>& gpus) {
  std::string problem;
  std::optional<gpu::GpuCode> code = gpu::read_gpu_code(info.path, &problem);
  if (!code || code->containers == 0) return;
  for (const auto& a : code->sass) info.sass.push_back(a.name());
  std::vector<int> ccs;
  for (const auto& g : gpus) ccs.push_back(g.sm);
  info.kernels = gpu::kernels_for(code->sass, code->ptx, ccs);
}

Prepared prepare(BenchSpec spec, const BenchOptions& opts, bool* made_out_dir) {
  Prepared p;
  check_nodes_can_start(spec, opts.bind != "127.0.0.1" || !opts.advertise.empty());  // --nodes: before anything
  p.res.context = new_run_context(opts.argv);
  RunContext& ctx = p.res.context;

  gpu::CudaFacts cuda = gpu::probe_cuda();
  ctx.driver_version = cuda.driver_version;
  ctx.runtime_version = cuda.runtime_version;
  ctx.gpus = cuda.gpus;
  if (!spec.dry_run && !cuda.available)
    throw NoGpuError("bench: " + cuda.problem +
                     "; `coldstart doctor` works without a GPU, and `coldstart bench --dry-run` shows the plan");
  spec.devices = resolve_devices(spec.devices, opts.gpus, cuda, spec.dry_run);
  OneGpuPlan one_gpu;  // said once the plan is known to be good: bad input stays one line
  if (spec.nranks() == 1 && !opts.ranks_per_gpu_given && spec.launcher == Launcher::lab)
    one_gpu = two_ranks_on_one_gpu(spec, opts.modes_given);
  check_nodes_split(spec);  // --nodes: each count divides the job's ranks, now that they are known
  if (spec.seed == 0) spec.seed = random_seed();
  ctx.seed = spec.seed;
  ctx.run_id = opts.resume ? opts.run_id : random_hex(8);

  p.res.configs = expand(spec);
  // Every rank's view is checked before anything starts, so bad --visible lists fail at once.
  for (const auto& c : p.res.configs)
    for (int r = 0; r < spec.nranks(); ++r)
      visibility_for({c.mode, spec.explicit_lists}, r, spec.devices, spec.ranks_per_gpu);
  if (spec.explicit_lists.size() > static_cast<size_t>(spec.nranks()))
    throw InputError("--visible gives " + std::to_string(spec.explicit_lists.size()) + " lists for " +
                     std::to_string(spec.nranks()) +
                     " ranks; give one list per rank, more GPUs, or several ranks per GPU with --ranks-per-gpu");

  // Each NCCL library is resolved once here (bad paths fail before any trial) and handed to every rank by path; a
  // name of `coldstart nccl build`'s cache (2.30.7+peer-regions) is its library. A dry run loads none, but refuses
  // what a real run could not load: no file, one it cannot read, one that is no library.
  if (spec.dry_run) {
    for (const auto& want : spec.nccl_libs) nccl::check_file("--nccl-lib " + want, ncclbuild::library_for(want));
  } else {
    std::map<std::string, int> fewest_nodes;  // each library's configuration of the fewest nodes
    for (const auto& c : p.res.configs)
      if (auto [it, fresh] = fewest_nodes.try_emplace(c.nccl_lib, c.nodes); !fresh)
        it->second = std::min(it->second, c.nodes);
    for (const auto& [want, nodes] : fewest_nodes) {
      nccl::Library lib = nccl::load(ncclbuild::library_for(want));
      // The torch probe runs PyTorch's own NCCL unless a library is named: the default found here is not it.
      const bool runs_it = spec.worker == Worker::nccl || !want.empty();
      if (runs_it && lib.version < nccl::kMultiRankGpuVersion && ranks_sharing_a_gpu(spec, nodes) > 1)
        throw InputError(fmt::format(
            "--ranks-per-gpu {}: {} is NCCL {}, which allows one rank per GPU of a node; give --nccl-lib an NCCL "
            "2.30 or newer, or --nodes {} (each rank of a GPU on a node of its own)",
            spec.ranks_per_gpu, lib.path, lib.version_string(), spec.nranks()));
      p.nccl_path[want] = lib.path;
      NcclLibInfo info{want, lib.path, lib.name(), {}, {}};
      // Its GPU code only where the ranks run it: the torch probe's default is PyTorch's own NCCL, not this one.
      if (runs_it) read_kernels(info, ctx.gpus);
      ctx.nccl.push_back(std::move(info));
    }
    tell_apart(ctx.nccl);  // two builds of one version: their labels name their folders
  }
  if (!spec.dry_run) check_capacity(spec, cuda, opts.observer);
  one_gpu.tell(opts.observer);
  p.plan = schedule(p.res.configs, spec.trials, spec.seed);
  p.res.spec = spec;

  make_output_dir(opts.out_dir, opts.allow_existing || opts.resume);
  if (!opts.allow_existing && !opts.resume) *made_out_dir = true;
  p.jsonl = opts.out_dir + "/results.jsonl";
  if (opts.resume) {
    p.finished = finished_trials(p.jsonl, ctx.run_id, spec, p.res.configs);
    std::string kept;
    for (const auto& [index, t] : p.finished) kept += dump_json(json(t)) + "\n";
    write_file_atomic(p.jsonl, kept);  // without the interrupted trial, which runs again
  } else {
    // The run's settings, resolved (devices, seed), so that `bench --resume DIR` can finish it.
    write_file_atomic(
        opts.out_dir + "/run.json",
        dump_json({{"schema", kRunSchema}, {"run_id", ctx.run_id}, {"spec", spec}, {"argv", opts.argv}}, 1) + "\n");
  }
  return p;
}

// The library a rank is told to load: the one resolved for its configuration; none under --dry-run, and none for the
// torch probe when no --nccl-lib was given (it then runs PyTorch's own NCCL, which it reports).
std::string rank_nccl_path(const BenchSpec& spec, const Config& c, const Prepared& p) {
  if (spec.dry_run || (spec.worker == Worker::torch && c.nccl_lib.empty())) return "";
  return p.nccl_path.at(c.nccl_lib);
}

// What starts the ranks: the worker command, Python and Ray where the run needs them, the coordinator, and the
// address the ranks are told.
struct Launchers {
  std::unique_ptr<NodeLab> nodes;  // --nodes above 1: first made, last gone (after the ranks and the coordinator)
  Starter starter;
  std::unique_ptr<launch::RayInstance> ray;
  std::unique_ptr<coord::Server> server;
};

Launchers start_launchers(const BenchSpec& spec, const BenchOptions& opts, RunContext& ctx) {
  Launchers l;
  Starter& starter = l.starter;
  // --nodes: the namespaces and their bridge, built once for the run (as many nodes as the largest count asks); the
  // coordinator then listens on the bridge. Ctrl-C from here on ends the run the usual way, which tears them down.
  std::string bind = opts.bind;
  if (const int most = *std::max_element(spec.nodes.begin(), spec.nodes.end()); most > 1) {
    launch::install_interrupt_handlers();
    l.nodes = std::make_unique<NodeLab>(most, spec.link, ctx.run_id);
    bind = l.nodes->lab_address();
    if (opts.observer) opts.observer->note(l.nodes->describe());
  }
  starter.worker_cmd = opts.worker_command;
  if (spec.worker == Worker::torch || spec.launcher == Launcher::ray)
    starter.python = launch::find_python_side(spec.worker == Worker::torch ? "--worker torch" : "--launcher ray");
  // Without torch every trial of the probe would fail the same way: refuse once, before the first.
  if (spec.worker == Worker::torch && starter.worker_cmd.empty())
    launch::require_python_module(*starter.python, "torch", "--worker torch", "torch");
  if (starter.worker_cmd.empty())
    starter.worker_cmd = spec.worker == Worker::torch
                             ? std::vector<std::string>{starter.python->python, "-m", "coldstart.torch_worker"}
                             : std::vector<std::string>{self_exe(), "worker"};
  // Ray: a local instance owned by this run (with the run's GPUs), unless --ray-address names a cluster.
  if (spec.launcher == Launcher::ray) {
    if (spec.ray_address.empty()) {
      if (opts.observer)
        opts.observer->note(
            fmt::format("starting a local Ray instance with {} GPU(s) (this can take a minute)...", spec.nranks()));
      l.ray = std::make_unique<launch::RayInstance>(*starter.python, spec.nranks(),
                                                    spec.dry_run ? "" : join(spec.devices, ","));
      starter.ray_address = l.ray->address();
      ctx.launcher = "ray " + l.ray->version();
    } else {
      starter.ray_address = spec.ray_address;
      ctx.launcher = "ray at " + spec.ray_address;
    }
  }

  l.server = std::make_unique<coord::Server>(coord::ServerOptions{bind, 0, random_hex(16)});
  // The ranks are told an address they can reach: where the server listens, or for a wildcard bind this host's
  // address toward them (a remote Ray cluster's head) or loopback.
  std::string toward;
  if (!spec.ray_address.empty() && coord::is_wildcard(opts.bind) && opts.advertise.empty()) {
    std::string addr = spec.ray_address.starts_with("ray://") ? spec.ray_address.substr(6) : spec.ray_address;
    try {
      toward = coord::parse_host_port(addr, "--ray-address").first;
    } catch (const InputError&) {
      throw InputError("--ray-address " + spec.ray_address +
                       ": coldstart cannot tell which host the ranks run on; "
                       "give the address they should reach this host at with --advertise HOST");
    }
  }
  starter.coord = coord::host_port(coord::advertised_address(bind, opts.advertise, toward), l.server->port());
  if (opts.observer)
    l.server->on_message = [obs = opts.observer](int rank, const json& msg) {
      if (msg.value("t", "") == "phase") obs->rank_phase(rank, msg.value("name", "?"));
    };
  return l;
}

// The trials in their order, each in fresh processes; every finished trial is on disk before the next starts.
void run_trials(Prepared& p, Launchers& l, const BenchOptions& opts) {
  const BenchSpec& spec = p.res.spec;
  launch::install_interrupt_handlers();
  for (const TrialPlan& tp : p.plan) {
    if (launch::interrupted()) break;
    if (auto done = p.finished.find(tp.index); done != p.finished.end()) {
      p.res.trials.push_back(std::move(done->second));
      continue;
    }
    const Config& c = p.res.configs[static_cast<size_t>(tp.config_id)];
    std::string trial_dir = fmt::format("{}/trials/{:04d}", opts.out_dir, tp.index);
    std::filesystem::remove_all(trial_dir);  // what an interrupted attempt left
    std::filesystem::create_directories(trial_dir);
    launch::TrialLaunch launch;
    launch.trial_id = tp.index;
    launch.timeout_s = spec.timeout_s;
    for (int r = 0; r < spec.nranks(); ++r)
      launch.ranks.push_back(
          rank_spawn(spec, c, r, tp.index, trial_dir, *l.server, l.starter, rank_nccl_path(spec, c, p), l.nodes.get()));
    TrialStart start{tp.index, static_cast<int>(p.plan.size()), config_label(c, p.res.context.nccl), tp.repeat,
                     spec.nranks()};
    if (opts.observer) opts.observer->trial_started(start);

    launch::TrialRun run = launch::run_trial(*l.server, launch);

    TrialResult t = collect_trial(tp, c, run, *l.server, trial_dir);
    t.lab_overhead_ms = lab_overhead_ms(run);
    t.run_id = p.res.context.run_id;
    t.config_key = c.key();
    append_line_durable(p.jsonl, dump_json(json(t)));
    if (opts.observer) opts.observer->trial_finished(start, t);
    p.res.trials.push_back(std::move(t));
  }
}

void finish(Prepared& p, const BenchOptions& opts) {
  p.res.summaries = summarize(p.res.configs, p.res.trials, p.res.context.nccl, p.res.spec.nranks());
  write_file_atomic(opts.out_dir + "/results.json", dump_json(json(p.res), 1) + "\n");
}

}  // namespace

BenchResults run_bench(BenchSpec spec, const BenchOptions& opts) {
  // An error before the first trial leaves nothing behind: the output folder goes when this run made it.
  bool ours = opts.out_created && !opts.resume;
  std::optional<Prepared> prepared;
  std::optional<Launchers> launchers;
  try {
    prepared.emplace(prepare(std::move(spec), opts, &ours));
    launchers.emplace(start_launchers(prepared->res.spec, opts, prepared->res.context));
  } catch (...) {
    std::error_code ec;
    if (ours) std::filesystem::remove_all(opts.out_dir, ec);
    throw;
  }
  Prepared& p = *prepared;
  Launchers& l = *launchers;
  run_trials(p, l, opts);
  finish(p, opts);
  return std::move(p.res);
}

std::string render_visibility(const BenchResults& r) {
  // The first trial of each configuration, in configuration order; the label column as wide as the longest label.
  std::map<int, const TrialResult*> first;
  for (const auto& t : r.trials) first.emplace(t.config_id, &t);
  size_t w = std::string_view("configuration").size();
  for (const auto& [id, t] : first)
    w = std::max(w, config_label(r.configs[static_cast<size_t>(id)], r.context.nccl).size());
  std::string out = fmt::format("{:<{}} {:>4}  {:<24} {:>6}  {}\n", "configuration", w, "rank", "CUDA_VISIBLE_DEVICES",
                                "device", "status");
  for (const auto& [id, t] : first)
    for (const auto& rr : t->ranks)
      out += fmt::format("{:<{}} {:>4}  {:<24} {:>6}  {}\n",
                         config_label(r.configs[static_cast<size_t>(id)], r.context.nccl), w, rr.rank,
                         rr.cuda_visible_devices, rr.device_index, t->status);
  return out;
}

}  // namespace coldstart::lab
