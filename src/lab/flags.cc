#include "lab/flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "lab/visibility.h"
#include "model/validate.h"
#include "util/strings.h"

namespace coldstart::lab {

Mode parse_mode(const std::string& s, const std::string& what) {
  return parse_enum<Mode>(s, what, " (launch models; ray and ray-noset with --launcher ray)");
}

Collective parse_collective(const std::string& s) { return parse_enum<Collective>(s, "--collective"); }

NcclLog parse_nccl_log(const std::string& s, bool list) {
  return parse_enum<NcclLog>(s, "--nccl-log", list ? " (or a list to compare: off,light)" : "");
}

Groups parse_groups(const std::string& s) {
  if (auto g = Groups::parse(s)) return *g;
  throw InputError("--groups: '" + s + "' is not a group plan; use world, split:K or fresh:K with 1 <= K <= " +
                   std::to_string(Groups::kMax));
}

Startup parse_startup(const std::string& text) {
  if (auto s = Startup::parse(text)) return *s;
  throw InputError("--startup " + text +
                   ": use none, cpu:DURATION (e.g. cpu:300ms), h2d:SIZE (e.g. h2d:32GiB) or h2d-pinned:SIZE, with "
                   "/PIECE for the bytes per copy (e.g. h2d:2GiB/16MiB; at most 16GiB)");
}

Fix parse_fix(const std::string& text) {
  if (auto f = Fix::parse(text)) return *f;
  throw InputError("--fix " + text + ": use " + kFixNames + " (channels:N with 1 <= N <= 64)");
}

EnvAxis parse_env_axis(const std::string& text) {
  auto eq = text.find('=');
  std::string key = text.substr(0, eq);
  bool key_ok = eq != std::string::npos;
  for (const auto& k : split(key, '+')) {
    bool ok = !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0]));
    for (char c : k) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    key_ok = key_ok && ok;
    if (ok && k == "CUDA_VISIBLE_DEVICES")
      throw InputError(
          "--env CUDA_VISIBLE_DEVICES: the launch model sets it; use --modes, --visible or --devices instead");
  }
  if (!key_ok)
    throw InputError("--env '" + text +
                     "': expected KEY=v1,v2,... (or KEY1+KEY2=v1,v2 for variables that take the "
                     "same value) with KEY a variable name; an empty value means unset");
  EnvAxis axis{key, {}};
  for (auto& v : split(std::string_view(text).substr(eq + 1), ',')) {
    if (v.empty())
      axis.values.emplace_back(std::nullopt);
    else
      axis.values.emplace_back(v);
  }
  return axis;
}

// ---- bench's flags to BenchSpec: one function per group of flags, in the order their errors are reported ----

namespace {

// --worker, --launcher, --ray-address, --modes and --visible: who starts which ranks under which launch models.
void read_launch(const BenchFlags& f, BenchSpec& s) {
  s.worker = parse_enum<Worker>(f.worker, "--worker", " (coldstart's worker, or the torch.distributed probe)");
  s.launcher = parse_enum<Launcher>(f.launcher, "--launcher", " (coldstart starts the ranks, or Ray actors)");
  if (!f.ray_address.empty() && s.launcher != Launcher::ray) throw InputError("--ray-address needs --launcher ray");
  s.ray_address = f.ray_address;
  s.modes.clear();
  // Under Ray, Ray sets each rank's visibility: its two models replace the lab's.
  const bool ray = s.launcher == Launcher::ray;
  std::string modes = ray && !f.modes_given ? "ray,ray-noset" : f.modes;
  for (const auto& m : split(modes, ',')) {
    Mode mode = parse_mode(std::string(trim(m)));
    if (is_ray_mode(mode) != ray)
      throw InputError(ray ? "--modes " + modes + ": under --launcher ray use ray and ray-noset"
                           : "--modes " + modes + ": ray and ray-noset need --launcher ray");
    s.modes.push_back(mode);
  }
  const bool has_explicit = std::find(s.modes.begin(), s.modes.end(), Mode::explicit_list) != s.modes.end();
  if (!f.visible.empty()) {
    s.explicit_lists = parse_explicit_lists(f.visible);
    if (!has_explicit) s.modes.push_back(Mode::explicit_list);
  } else if (has_explicit) {
    throw InputError("--modes explicit needs --visible with one device list per rank, e.g. --visible 0,1/1,0");
  }
}

// --env, --nccl-lib and --nccl-log: the matrix's axes beside the launch models.
void read_axes(const BenchFlags& f, BenchSpec& s) {
  for (const auto& e : f.env) {
    s.env.push_back(parse_env_axis(e));
    if (s.env.back().key.find("COLDSTART_TOKEN") != std::string::npos)
      throw InputError("--env COLDSTART_TOKEN: the lab sets it (a fresh token per run); leave it out");
  }
  if (!f.nccl_libs.empty()) s.nccl_libs = split(f.nccl_libs, ',');
  s.nccl_logs.clear();
  for (const auto& l : split(f.nccl_log, ',')) s.nccl_logs.push_back(parse_nccl_log(std::string(trim(l))));
}

// A --seed: digits only, since a sign or a value past 2^64-1 would otherwise wrap into another seed.
uint64_t parse_seed(const std::string& text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text[0] == '-' || text[0] == '+' || ec != std::errc() || end != text.data() + text.size() || v == 0)
    throw InputError("--seed " + text +
                     ": give a whole number from 1 to 18446744073709551615 (or leave it out "
                     "for a random seed)");
  return v;
}

}  // namespace

std::vector<int> rank_counts(const BenchFlags& f) {
  std::vector<int> counts;
  const std::vector<std::string> parts = split(f.ranks_per_gpu, ',');
  for (const auto& v : parts) {
    auto k = parse_int(trim(v));
    if (!k || *k < 1 || *k > kMaxRanksPerGpu)
      throw InputError(parts.size() == 1
                           ? fmt::format("--ranks-per-gpu {}: give 1 to {}", f.ranks_per_gpu, kMaxRanksPerGpu)
                           : fmt::format("--ranks-per-gpu {}: give counts from 1 to {}, ascending, "
                                         "e.g. 2,4,8",
                                         f.ranks_per_gpu, kMaxRanksPerGpu));
    if (!counts.empty() && *k <= counts.back())
      throw InputError("--ranks-per-gpu " + f.ranks_per_gpu + ": give the counts ascending, each once (2,4,8)");
    counts.push_back(static_cast<int>(*k));
  }
  return counts;
}

namespace {

// --nodes and --link: the job's ranks over nodes emulated on this machine, and the link between them.
void read_nodes(const BenchFlags& f, BenchSpec& s) {
  s.nodes.clear();
  for (const auto& v : split(f.nodes, ',')) {
    auto n = parse_int(trim(v));
    if (!n || *n < 1 || *n > kMaxNodes)
      throw InputError(fmt::format("--nodes {}: give node counts from 1 to {}, e.g. 1,2,4", f.nodes, kMaxNodes));
    if (std::find(s.nodes.begin(), s.nodes.end(), *n) != s.nodes.end())
      throw InputError("--nodes " + f.nodes + ": " + std::to_string(*n) + " twice; give each node count once");
    s.nodes.push_back(static_cast<int>(*n));
  }
  const bool several = std::any_of(s.nodes.begin(), s.nodes.end(), [](int n) { return n > 1; });
  if (several && s.launcher == Launcher::ray)
    throw InputError("--nodes with --launcher ray: Ray places its actors itself; use the lab's launch models");
  if (f.link.empty()) return;
  auto link = Link::parse(f.link);
  if (!link)
    throw InputError("--link " + f.link +
                     ": give LATENCY[/RATE], the latency in us, ms or s (at most 10s) and the rate in kbit, mbit, "
                     "gbit or tbit, e.g. 50us/100gbit or 1ms");
  if (!several)
    throw InputError("--link " + f.link +
                     ": the link is between nodes; give --nodes with a count above 1 (e.g. "
                     "--nodes 1,2)");
  s.link = *link;
}

// --devices, --ranks-per-gpu, --trials and --seed: the job's GPUs and how often each configuration runs.
void read_job(const BenchFlags& f, BenchSpec& s) {
  if (!f.devices.empty()) s.devices = parse_device_list(f.devices, "--devices");
  const std::vector<int> counts = rank_counts(f);
  if (counts.back() > 1 && s.launcher == Launcher::ray)
    throw InputError(
        "--ranks-per-gpu with --launcher ray: Ray gives each actor a whole GPU here; use the lab's launch "
        "models (shared, isolated, remap)");
  s.ranks_per_gpu = counts.front();  // a series' runs each take their own (cli/bench_cmd.cc)
  if (f.trials < 1 || f.trials > kMaxTrials)
    throw InputError("--trials " + std::to_string(f.trials) + ": give 1 to " + std::to_string(kMaxTrials));
  s.trials = f.trials;
  if (!f.seed.empty()) s.seed = parse_seed(f.seed);
  read_nodes(f, s);
}

// --collective, --size, --groups, --timeout, --iters, --warmup and --dry-run: what each rank does, and for how long.
void read_workload(const BenchFlags& f, BenchSpec& s) {
  s.collective = parse_collective(f.collective);
  auto size = parse_size(f.size);
  if (!size) throw InputError("--size " + f.size + ": not a size; use e.g. 64MiB, 1GiB or 4096 (0 skips steady state)");
  s.size_bytes = *size;
  s.groups = parse_groups(f.groups);
  auto timeout = parse_duration(f.timeout);
  if (!timeout || *timeout <= 0 || *timeout > kMaxTimeoutS)
    throw InputError("--timeout " + f.timeout + ": give a duration from 1ms to 24h, e.g. 120s or 5m");
  s.timeout_s = *timeout;
  if (f.iters < 0 || f.warmup < 0 || f.iters > kMaxIters || f.warmup > kMaxIters)
    throw InputError(fmt::format("--iters {} --warmup {}: give 0 to {} each", f.iters, f.warmup, kMaxIters));
  s.steady_iters = f.iters;
  s.warmup_iters = f.warmup;
  s.dry_run = f.dry_run;
}

// --startup, --fix, --coverage and --trace: what is measured beside the start-up itself.
void read_measures(const BenchFlags& f, BenchSpec& s) {
  s.startups.clear();
  for (const auto& v : split(f.startup, ',')) s.startups.push_back(parse_startup(std::string(trim(v))));
  s.fixes.clear();
  for (const auto& v : split(f.fix, ',')) s.fixes.push_back(parse_fix(std::string(trim(v))));
  s.coverage = f.coverage;
  s.traces.clear();
  for (const auto& v : split(f.trace, ',')) {
    std::string t(trim(v));
    if (t != "on" && t != "off") throw InputError("--trace " + f.trace + ": use on, off, or off,on to compare");
    s.traces.push_back(t == "on");
  }
}

}  // namespace

BenchSpec to_spec(const BenchFlags& f) {
  BenchSpec s;
  read_launch(f, s);
  read_axes(f, s);
  read_job(f, s);
  read_workload(f, s);
  read_measures(f, s);
  // What the flags above did not say each in its own words (a launch model or an --env variable twice): the rules
  // every run's records are read under.
  if (auto bad = check_spec(s, ""))
    throw InputError("bench: " + bad->text() + "; give each launch model, variable and value once");
  return s;
}

}  // namespace coldstart::lab
