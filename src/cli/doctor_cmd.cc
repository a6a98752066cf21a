#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "doctor/facts.h"
#include "doctor/report.h"
#include "doctor/rules.h"
#include "lab/bench.h"
#include "lab/flags.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/random.h"

namespace coldstart::cli {

Run add_doctor(CLI::App& app) {
  struct Flags {
    bool json = false, measure = false;
    int ranks = 0;
    std::string mode = "isolated", from, facts, launcher = "lab", ray_address;
  };
  auto f = std::make_shared<Flags>();
  app.add_flag("--json", f->json, "Print JSON (schema coldstart.doctor/1)");
  app.add_option("--ranks", f->ranks, "Start N ranks under --mode (a dry run) and report what each would see");
  app.add_option("--mode", f->mode,
                 "Launch model for --ranks: shared, isolated, remap (ray, ray-noset with --launcher ray)")
      ->capture_default_str();
  app.add_option("--launcher", f->launcher,
                 "For --ranks: lab, or ray (start the ranks as Ray actors and show what Ray "
                 "gives each)")
      ->capture_default_str();
  app.add_option("--ray-address", f->ray_address, "--launcher ray: an existing Ray cluster (default: a local one)");
  app.add_option("--from", f->from, "A bench results.json whose measurements go into the advice");
  app.add_flag("--measure", f->measure, "Run a short bench (isolated, cuMem on vs off, 3 trials) for the advice");
  app.add_option("--facts", f->facts, "Evaluate a fact set recorded elsewhere (doctor --json's \"facts\")");
  return [f]() {
    doctor::Facts facts;
    if (!f->facts.empty()) {
      auto j = nlohmann::json::parse(read_file(f->facts), nullptr, false);
      if (j.is_discarded()) throw InputError("--facts " + f->facts + ": not valid JSON; give doctor --json's output");
      facts = doctor::facts_from_json(j.contains("facts") ? j["facts"] : j);
    } else {
      facts = doctor::collect_facts();
    }
    const Launcher launcher = parse_enum<Launcher>(f->launcher, "--launcher");
    const bool ray = launcher == Launcher::ray;
    if (ray && f->mode == "isolated") f->mode = "ray";  // the masked model, as Ray gives it
    Mode mode = parse_mode(f->mode, "--mode");
    if (is_ray_mode(mode) != ray)
      throw InputError("--mode " + f->mode +
                       (ray ? ": under --launcher ray use ray or ray-noset" : ": needs --launcher ray"));
    if (ray && f->ranks <= 0) throw InputError("--launcher ray needs --ranks N");
    if (f->ranks < 0 || f->ranks > 256)
      throw InputError("--ranks " + std::to_string(f->ranks) + ": give 1 to 256 (one process per rank is started)");
    std::vector<doctor::RankView> ranks;
    BenchOptions quiet;
    quiet.worker_command = {self_exe(), "worker"};
    if (f->ranks > 0) {
      BenchSpec dry;
      dry.dry_run = true;
      dry.trials = 1;
      dry.modes = {mode};
      dry.launcher = launcher;
      dry.ray_address = f->ray_address;
      dry.env = {parse_env_axis("NCCL_CUMEM_ENABLE=")};
      quiet.gpus = f->ranks;
      TempDir scratch("coldstart-doctor-");  // nothing is left behind
      quiet.out_dir = scratch.path() + "/plan";
      ranks = doctor::rank_views(run_bench(dry, quiet), facts);
    }
    BenchResults measured;
    const BenchResults* measured_ptr = nullptr;
    if (!f->from.empty()) {
      measured = load_bench_results(f->from);
      measured_ptr = &measured;
    } else if (f->measure) {
      BenchSpec spec;
      spec.modes = {Mode::isolated};
      spec.env = {parse_env_axis("NCCL_CUMEM_ENABLE=,0")};
      spec.trials = 3;
      spec.nccl_logs = {NcclLog::off};
      BenchOptions opts = quiet;
      opts.gpus = f->ranks;
      TempDir scratch("coldstart-doctor-");  // nothing is left behind
      opts.out_dir = scratch.path() + "/measure";
      TerminalProgress progress(std::cerr, false);
      opts.observer = &progress;
      std::cerr << "doctor: measuring (isolated, cuMem on vs NCCL_CUMEM_ENABLE=0, 3 trials each)\n";
      measured = run_bench(spec, opts);
      measured_ptr = &measured;
    }
    auto findings = doctor::evaluate({&facts, ranks, measured_ptr});
    if (f->json)
      std::cout << dump_json(doctor::report_json(facts, ranks, findings), 1) << "\n";
    else
      std::cout << doctor::render_report(facts, ranks, findings);
    return 0;
  };
}

}  // namespace coldstart::cli
