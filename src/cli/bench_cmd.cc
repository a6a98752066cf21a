#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iostream>

#include "analysis/fixes.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "doctor/report.h"
#include "doctor/rules.h"
#include "lab/bench.h"
#include "lab/flags.h"
#include "lab/visibility.h"
#include "launch/trial.h"
#include "model/validate.h"
#include "report/html.h"
#include "report/perfetto.h"
#include "report/table.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::cli {
namespace {
// Flag text, with the defaults written from BenchSpec's own (the one place they are set).
template <NamedEnum E>
std::string names_of(const std::vector<E>& v) {
  std::vector<std::string> out;
  for (E e : v) out.emplace_back(name_of(e));
  return join(out, ",");
}

struct BenchFlags {
  BenchSpec d;
  std::string modes = names_of(d.modes);
  std::string visible;
  std::vector<std::string> env;
  std::string nccl_libs;
  std::string nccl_log = names_of(d.nccl_logs);
  std::string devices;
  int gpus = 0;
  int ranks_per_gpu = d.ranks_per_gpu;
  int trials = d.trials;
  std::string seed;  // empty: a random seed
  std::string collective{name_of(d.collective)};
  std::string size = format_size(d.size_bytes);
  std::string groups = d.groups.name();
  std::string timeout = fmt::format("{}s", d.timeout_s);
  int iters = d.steady_iters, warmup = d.warmup_iters;
  std::string out;
  std::string bind = "127.0.0.1", advertise;
  bool dry_run = d.dry_run;
  std::string trace = "off";
  std::string startup = "none", fix = "none";
  bool coverage = d.coverage;
  std::string worker{name_of(d.worker)}, launcher{name_of(d.launcher)}, ray_address, resume;
  bool modes_given = false;
  bool ranks_per_gpu_given = false;
};

constexpr const char* kDefaultOutParent = "coldstart-out";

BenchSpec to_spec(const BenchFlags& f) {
  BenchSpec s;
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
  if (!f.visible.empty()) {
    s.explicit_lists = parse_explicit_lists(f.visible);
    if (std::find(s.modes.begin(), s.modes.end(), Mode::explicit_list) == s.modes.end())
      s.modes.push_back(Mode::explicit_list);
  } else if (std::find(s.modes.begin(), s.modes.end(), Mode::explicit_list) != s.modes.end()) {
    throw InputError("--modes explicit needs --visible with one device list per rank, e.g. --visible 0,1/1,0");
  }
  for (const auto& e : f.env) {
    s.env.push_back(parse_env_axis(e));
    if (s.env.back().key.find("COLDSTART_TOKEN") != std::string::npos)
      throw InputError("--env COLDSTART_TOKEN: the lab sets it (a fresh token per run); leave it out");
  }
  if (!f.nccl_libs.empty()) s.nccl_libs = split(f.nccl_libs, ',');
  s.nccl_logs.clear();
  for (const auto& l : split(f.nccl_log, ',')) s.nccl_logs.push_back(parse_nccl_log(std::string(trim(l))));
  if (!f.devices.empty()) s.devices = parse_device_list(f.devices, "--devices");
  if (f.ranks_per_gpu < 1 || f.ranks_per_gpu > kMaxRanksPerGpu)
    throw InputError(fmt::format("--ranks-per-gpu {}: give 1 to {}", f.ranks_per_gpu, kMaxRanksPerGpu));
  if (f.ranks_per_gpu > 1 && ray)
    throw InputError(
        "--ranks-per-gpu with --launcher ray: Ray gives each actor a whole GPU here; use the lab's launch "
        "models (shared, isolated, remap)");
  s.ranks_per_gpu = f.ranks_per_gpu;
  if (f.trials < 1 || f.trials > kMaxTrials)
    throw InputError("--trials " + std::to_string(f.trials) + ": give 1 to " + std::to_string(kMaxTrials));
  s.trials = f.trials;
  if (!f.seed.empty()) {
    // Digits only: a sign or a value past 2^64-1 would otherwise wrap into another seed.
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(f.seed.data(), f.seed.data() + f.seed.size(), v);
    if (f.seed[0] == '-' || f.seed[0] == '+' || ec != std::errc() || end != f.seed.data() + f.seed.size() || v == 0)
      throw InputError("--seed " + f.seed +
                       ": give a whole number from 1 to 18446744073709551615 (or leave it out "
                       "for a random seed)");
    s.seed = v;
  }
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
  // What the flags above did not say each in its own words (a launch model or an --env variable twice): the rules
  // every run's records are read under.
  if (auto bad = check_spec(s, ""))
    throw InputError("bench: " + bad->text() + "; give each launch model, variable and value once");
  return s;
}
}  // namespace

Run add_bench(CLI::App& app, int argc, char** argv) {
  auto f = std::make_shared<BenchFlags>();
  app.add_option("--modes", f->modes,
                 "Launch models: shared,isolated,remap,explicit (ray,ray-noset with --launcher ray)")
      ->capture_default_str()
      ->each([f](const std::string&) { f->modes_given = true; });
  app.add_option("--worker", f->worker, "Rank program: nccl (coldstart's worker) or torch (torch.distributed probe)")
      ->capture_default_str();
  app.add_option("--launcher", f->launcher, "lab (coldstart starts the ranks) or ray (as Ray actors with num_gpus=1)")
      ->capture_default_str();
  app.add_option("--ray-address", f->ray_address, "--launcher ray: an existing Ray cluster (default: a local one)");
  app.add_option("--visible", f->visible, "Explicit per-rank CUDA_VISIBLE_DEVICES lists, '/'-separated: 0,1/1,0@0");
  app.add_option("--env", f->env,
                 "Matrix axis KEY=v1,v2,... (empty value = unset); repeatable. Replaces the default axis "
                 "NCCL_CUMEM_ENABLE=,0 (add it as an --env to keep it)")
      ->take_all()
      ->expected(1);
  app.add_option("--nccl-lib", f->nccl_libs, "NCCL libraries to compare, comma-separated paths");
  app.add_option("--nccl-log", f->nccl_log, "NCCL's debug log per rank: off, light, full, or a list to compare")
      ->capture_default_str();
  app.add_option("--gpus", f->gpus,
                 "GPUs of the job (one rank each unless --ranks-per-gpu); default: every visible GPU")
      ->check(CLI::Range(1, 4096).description("1 to 4096"));
  app.add_option("--devices", f->devices, "The job's GPUs by index or UUID, comma-separated");
  app.add_option("--ranks-per-gpu", f->ranks_per_gpu,
                 "Ranks on each GPU (NCCL >= 2.30, which the lab asks with NCCL_MULTI_RANK_GPU_ENABLE=1; "
                 "default 1, and 2 where the job has one GPU)")
      ->capture_default_str()
      ->each([f](const std::string&) { f->ranks_per_gpu_given = true; });
  app.add_option("--trials", f->trials, "Trials per configuration")->capture_default_str();
  app.add_option("--seed", f->seed, "Seed of the trial order, 1 to 2^64-1 (default: random, recorded)");
  app.add_option("--collective", f->collective,
                 "all_reduce | all_gather | reduce_scatter | broadcast | sendrecv | all_to_all")
      ->capture_default_str();
  app.add_option("--size", f->size, "Bytes for the steady-state bandwidth (0 skips it)")->capture_default_str();
  app.add_option("--groups", f->groups, "world | split:K | fresh:K")->capture_default_str();
  app.add_option("--timeout", f->timeout, "Per-trial watchdog")->capture_default_str();
  app.add_option("--iters", f->iters, "Steady-state iterations")->capture_default_str();
  app.add_option("--warmup", f->warmup, "Steady-state warm-up iterations")->capture_default_str();
  app.add_option("--out", f->out, "Output folder (default coldstart-out/<time>; must not exist)");
  app.add_option("--bind", f->bind, "Address the coordinator listens on (loopback by default; 0.0.0.0 for all)")
      ->capture_default_str();
  app.add_option("--advertise", f->advertise,
                 "Address the ranks are told to reach the coordinator at (default: --bind, or for 0.0.0.0 this "
                 "host's address toward the ranks)");
  app.add_option("--trace", f->trace,
                 "on: attach the CUPTI tracer to every rank and attribute the first collective to CUDA calls; "
                 "off,on compares")
      ->capture_default_str();
  app.add_option("--startup", f->startup,
                 "The job's own start-up work between init and the first collective, on each rank's main thread: "
                 "none, cpu:DURATION, h2d:SIZE or h2d-pinned:SIZE (/PIECE: bytes per copy), or a list to compare")
      ->capture_default_str();
  app.add_option("--fix", f->fix,
                 "Fixes to measure against the same start-up, a list of none, cumem-off, eager-connect, channels:N, "
                 "prewarm, split-share (docs/fixes.md)")
      ->capture_default_str();
  app.add_flag(
      "--coverage", f->coverage,
      "After the first collective, time the first call of other collectives and sizes (what a warm-up covers)");
  app.add_flag("--dry-run", f->dry_run, "Start the ranks and the coordinator without CUDA: show what each rank sees");
  app.add_option("--resume", f->resume, "Finish an interrupted run in DIR (its settings; finished trials are kept)");
  return [f, argc, argv, &app]() {
    BenchSpec spec;
    BenchOptions opts;
    bool made_parent = false;  // coldstart-out/ did not exist before this run
    if (!f->resume.empty()) {
      for (const CLI::Option* o : app.get_options())
        if (o->count() > 0 && o->get_name() != "--resume")
          throw InputError("--resume takes the run's settings from " + f->resume + "/run.json; give no other flag (" +
                           o->get_name() + ")");
      RunSettings settings = load_run_settings(f->resume);
      spec = settings.spec;
      opts.run_id = settings.run_id;
      opts.out_dir = f->resume;
      opts.resume = true;
    } else {
      spec = to_spec(*f);
      if (f->out.empty()) {  // a default name: unique, even for runs started in the same second
        made_parent = !std::filesystem::exists(kDefaultOutParent);
        opts.out_dir = make_unique_output_dir(format_now("coldstart-out/%Y%m%d-%H%M%S", false));
        opts.allow_existing = opts.out_created = true;
      } else {
        opts.out_dir = f->out;
      }
    }
    opts.bind = f->bind;
    opts.advertise = f->advertise;
    opts.argv.assign(argv, argv + argc);
    opts.gpus = f->gpus;
    opts.ranks_per_gpu_given = f->ranks_per_gpu_given || opts.resume;
    TerminalProgress progress(std::cerr, ::isatty(2));
    opts.observer = &progress;
    BenchResults r;
    try {
      r = run_bench(spec, opts);
    } catch (...) {
      // run_bench removed the run's folder it made; the default parent goes too when this run made it and it is
      // empty (remove() leaves a folder with anything in it).
      std::error_code ec;
      if (made_parent) std::filesystem::remove(kDefaultOutParent, ec);
      throw;
    }
    std::cout << (spec.dry_run ? render_visibility(r) : render_table(r));
    if (!spec.dry_run) std::cout << analysis::render_fix_rankings(analysis::rank_fixes(r));
    if (!spec.dry_run) {
      // The same renderers as `coldstart report`, and the same advice as the closing lines.
      auto advice = doctor::masked_advice(r, doctor::collect_facts());
      if (!advice.empty()) std::cout << "\nadvice for the masked launch model:\n" << doctor::render_findings(advice);
      report::HtmlOptions html;
      html.advice = {advice};
      write_file_atomic(opts.out_dir + "/report.html", report::render_html({&r}, html));
      write_file_atomic(opts.out_dir + "/timeline.json", report::perfetto_trace({&r}));
      std::cout << "report: " << opts.out_dir << "/report.html, timeline (Perfetto): " << opts.out_dir
                << "/timeline.json\n";
    }
    std::cout << "results: " << opts.out_dir << "/results.json\n";
    if (spec.dry_run)
      std::cout << "(a dry run times nothing: no report.html or timeline.json; run without --dry-run on GPUs for "
                   "them)\n";
    if (interrupted()) {
      const auto finished = std::count_if(r.trials.begin(), r.trials.end(),
                                          [](const TrialResult& t) { return t.status != TrialStatus::interrupted; });
      std::cerr << "coldstart: interrupted; " << finished << " finished trial(s) are in " << opts.out_dir
                << " (bench --resume " << opts.out_dir << " runs the rest)\n";
      return 130;
    }
    return all_ok(r) ? 0 : 1;
  };
}

}  // namespace coldstart::cli
