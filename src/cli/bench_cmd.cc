#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "analysis/disturbance.h"
#include "analysis/fixes.h"
#include "analysis/growth.h"
#include "analysis/verdict.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "doctor/report.h"
#include "doctor/rules.h"
#include "lab/bench.h"
#include "lab/flags.h"
#include "lab/visibility.h"
#include "launch/trial.h"
#include "model/validate.h"
#include "report/growth.h"
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
constexpr const char* kDefaultOutParent = "coldstart-out";

// Binds every flag to its field of `f`, in --help's order.
void add_bench_flags(CLI::App& app, const std::shared_ptr<lab::BenchFlags>& f) {
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
                 "default 1, and 2 where the job has one GPU); an ascending list (2,4,8,16) runs one job per count, "
                 "each in OUT/ranks-K, and ends with how each phase grows (report --growth)")
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
                 "prewarm, split-share, socket-poll (docs/fixes.md)")
      ->capture_default_str();
  app.add_flag(
      "--coverage", f->coverage,
      "After the first collective, time the first call of other collectives and sizes (what a warm-up covers)");
  app.add_option("--nodes", f->nodes,
                 "Nodes the job's ranks are split over, each a network namespace with its own hostname on a bridge "
                 "(NCCL connects them with its socket transport), or a list to compare, e.g. 1,2,4; root; "
                 "docs/bench.md")
      ->capture_default_str();
  app.add_option("--link", f->link,
                 "The link between the nodes: LATENCY[/RATE] (netem), e.g. 50us/100gbit or 1ms; one value, for "
                 "every configuration of more than one node (default: the bridge as it is)");
  app.add_flag("--dry-run", f->dry_run, "Start the ranks and the coordinator without CUDA: show what each rank sees");
  app.add_option("--resume", f->resume, "Finish an interrupted run in DIR (its settings; finished trials are kept)");
}

// The run's spec and options: from --resume's run.json (then no other flag may be given), or from the flags.
struct BenchPlan {
  BenchSpec spec;
  lab::BenchOptions opts;
  bool made_parent = false;  // coldstart-out/ did not exist before this run
};

BenchPlan plan_bench(const CLI::App& app, const lab::BenchFlags& f, int argc, char** argv) {
  BenchPlan p;
  if (!f.resume.empty()) {
    for (const CLI::Option* o : app.get_options())
      if (o->count() > 0 && o->get_name() != "--resume")
        throw InputError("--resume takes the run's settings from " + f.resume + "/run.json; give no other flag (" +
                         o->get_name() + ")");
    lab::RunSettings settings = lab::load_run_settings(f.resume);
    p.spec = settings.spec;
    p.opts.run_id = settings.run_id;
    p.opts.out_dir = f.resume;
    p.opts.resume = true;
  } else {
    p.spec = to_spec(f);
    if (f.out.empty()) {  // a default name: unique, even for runs started in the same second
      p.made_parent = !std::filesystem::exists(kDefaultOutParent);
      p.opts.out_dir = make_unique_output_dir(format_now("coldstart-out/%Y%m%d-%H%M%S", false));
      p.opts.allow_existing = p.opts.out_created = true;
    } else {
      p.opts.out_dir = f.out;
    }
  }
  p.opts.bind = f.bind;
  p.opts.advertise = f.advertise;
  p.opts.argv.assign(argv, argv + argc);
  p.opts.gpus = f.gpus;
  p.opts.ranks_per_gpu_given = f.ranks_per_gpu_given || p.opts.resume;
  p.opts.modes_given = f.modes_given || p.opts.resume;
  return p;
}

// What a finished run prints, and the report and timeline it writes beside results.json.
void print_bench(const BenchSpec& spec, const BenchResults& r, const std::string& out_dir) {
  std::cout << (spec.dry_run ? lab::render_visibility(r) : report::render_table(r));
  if (!spec.dry_run) {
    // The fix ranking and the same advice as doctor's; then the verdict, the lines doctor --from ends its ranking
    // with, and what the lab's own NCCL log cost where the run holds that A/B; then the same renderers as `coldstart
    // report`.
    const auto rankings = analysis::rank_fixes(r);
    std::cout << analysis::render_fix_details(rankings);
    auto advice = doctor::masked_advice(r, doctor::collect_facts());
    if (!advice.empty()) std::cout << "\nadvice for the masked launch model:\n" << doctor::render_findings(advice);
    std::cout << "\n" << analysis::render_verdicts(rankings);
    std::cout << analysis::render_log_disturbance(analysis::log_disturbance(r));  // with --nccl-log off beside another
    report::HtmlOptions html;
    html.advice = {advice};
    write_file_atomic(out_dir + "/report.html", report::render_html({&r}, html));
    write_file_atomic(out_dir + "/timeline.json", report::perfetto_trace({&r}));
    std::cout << "report: " << out_dir << "/report.html, timeline (Perfetto): " << out_dir << "/timeline.json\n";
  }
  std::cout << "results: " << out_dir << "/results.json\n";
  if (spec.dry_run)
    std::cout << "(a dry run times nothing: no report.html or timeline.json; run without --dry-run on GPUs for "
                 "them)\n";
}

// The run's exit status; `kept`, when given, receives its results (a series fits its growth to them).
int run_bench_cmd(const CLI::App& app, const lab::BenchFlags& f, int argc, char** argv, BenchResults* kept = nullptr) {
  BenchPlan p = plan_bench(app, f, argc, argv);
  TerminalProgress progress(std::cerr, ::isatty(2));
  p.opts.observer = &progress;
  BenchResults r;
  try {
    r = run_bench(p.spec, p.opts);
  } catch (...) {
    // run_bench removed the run's folder it made; the default parent goes too when this run made it and it is
    // empty (remove() leaves a folder with anything in it).
    std::error_code ec;
    if (p.made_parent) std::filesystem::remove(kDefaultOutParent, ec);
    throw;
  }
  print_bench(p.spec, r, p.opts.out_dir);
  if (launch::interrupted()) {
    const auto finished = std::count_if(r.trials.begin(), r.trials.end(),
                                        [](const TrialResult& t) { return t.status != TrialStatus::interrupted; });
    std::cerr << "coldstart: interrupted; " << finished << " finished trial(s) are in " << p.opts.out_dir
              << " (bench --resume " << p.opts.out_dir << " runs the rest)\n";
    return 130;
  }
  const int status = lab::all_ok(r) ? 0 : 1;
  if (kept) *kept = std::move(r);
  return status;
}

// --ranks-per-gpu K,L,...: one run per count, each in OUT/ranks-K, one after another (each a job of its own: what is
// interleaved is a run's configurations), then the growth of each phase over them. A run that fails its trials does
// not stop the series; an interrupt does.
int run_series(const CLI::App& app, const lab::BenchFlags& f, const std::vector<int>& counts, int argc, char** argv) {
  if (!f.resume.empty())
    throw InputError(
        "--resume finishes one run: give it a series' OUT/ranks-K folder (then report --growth "
        "OUT/ranks-*/results.json)");
  lab::to_spec(f);  // every other flag checked before the first run
  const std::string base =
      f.out.empty() ? make_unique_output_dir(format_now("coldstart-out/%Y%m%d-%H%M%S", false)) : f.out;
  if (!f.out.empty()) make_output_dir(base, false);
  std::vector<BenchResults> runs;
  std::vector<std::string> names;
  int status = 0;
  for (int k : counts) {
    lab::BenchFlags one = f;
    one.ranks_per_gpu = std::to_string(k);
    one.out = base + "/ranks-" + std::to_string(k);
    std::cerr << "coldstart: series: " << k << " rank(s) per GPU, " << one.out << "\n";
    BenchResults r;
    status = std::max(status, run_bench_cmd(app, one, argc, argv, &r));
    if (launch::interrupted()) return 130;
    runs.push_back(std::move(r));
    names.push_back(one.out + "/results.json");
  }
  if (f.dry_run) return status;
  std::vector<const BenchResults*> ptrs;
  for (const auto& r : runs) ptrs.push_back(&r);
  if (counts.size() >= analysis::kMinRankCounts)
    std::cout << "\n" << report::render_growth(analysis::growth(ptrs, names), false);
  else
    std::cout << "\n(the growth needs " << analysis::kMinRankCounts << " rank counts; report --growth draws it from "
              << "more runs)\n";
  return status;
}
}  // namespace

Run add_bench(CLI::App& app, int argc, char** argv) {
  auto f = std::make_shared<lab::BenchFlags>();
  add_bench_flags(app, f);
  return [f, argc, argv, &app]() {
    const std::vector<int> counts = lab::rank_counts(*f);
    return counts.size() > 1 ? run_series(app, *f, counts, argc, argv) : run_bench_cmd(app, *f, argc, argv);
  };
}

}  // namespace coldstart::cli
