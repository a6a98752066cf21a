#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "doctor/facts.h"
#include "doctor/report.h"
#include "doctor/rules.h"
#include "lab/bench.h"
#include "lab/flags.h"
#include "lab/visibility.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/random.h"

namespace coldstart::cli {
namespace {
// What the plan's launcher says while it starts (a local Ray instance takes a minute), and nothing per trial.
class Notes : public lab::BenchObserver {
 public:
  void note(std::string_view line) override { std::cerr << "doctor: " << line << "\n" << std::flush; }
};

struct DoctorFlags {
  bool json = false, measure = false;
  int ranks = 0;
  std::string mode = "isolated", from, facts, launcher = "lab", ray_address, visible;
  const CLI::Option* ranks_opt = nullptr;
  std::vector<const CLI::Option*> plan_flags;  // flags that only shape --ranks' plan: refused without it
};

// Binds every flag to its field of `f`, in --help's order.
void add_doctor_flags(CLI::App& app, DoctorFlags& f) {
  app.add_flag("--json", f.json, "Print JSON (schema coldstart.doctor/2)");
  f.ranks_opt =
      app.add_option("--ranks", f.ranks, "Start N ranks under --mode (a dry run) and report what each would see");
  f.plan_flags.push_back(app.add_option("--mode", f.mode,
                                        "Launch model for --ranks: shared, isolated, remap, explicit (with "
                                        "--visible); ray, ray-noset with --launcher ray")
                             ->capture_default_str());
  f.plan_flags.push_back(app.add_option(
      "--visible", f.visible, "--mode explicit: per-rank CUDA_VISIBLE_DEVICES lists, '/'-separated: 0,1/1,0@0"));
  f.plan_flags.push_back(app.add_option("--launcher", f.launcher,
                                        "For --ranks: lab, or ray (start the ranks as Ray actors and show what Ray "
                                        "gives each)")
                             ->capture_default_str());
  f.plan_flags.push_back(
      app.add_option("--ray-address", f.ray_address, "--launcher ray: an existing Ray cluster (default: a local one)"));
  app.add_option("--from", f.from, "A bench results.json whose measurements go into the advice ('-': standard input)");
  app.add_flag("--measure", f.measure,
               "Run a short bench (isolated, cuMem on vs off, 3 trials, on --ranks GPUs or every GPU) for the "
               "advice; not with --from");
  app.add_option("--facts", f.facts,
                 "Evaluate a fact set recorded elsewhere (doctor --json's \"facts\"; '-': standard input)");
}

// The flags that cannot go together, refused before anything is read or started.
void check_doctor_flags(const DoctorFlags& f) {
  if (f.ranks_opt->count() > 0 && f.ranks < 1)
    throw InputError("--ranks " + std::to_string(f.ranks) +
                     ": give 1 to 256 ranks to plan (leave --ranks out to check this process only)");
  if (f.ranks_opt->count() == 0)
    for (const CLI::Option* o : f.plan_flags)
      if (o->count() > 0)
        throw InputError(o->get_name() +
                         " needs --ranks N: it shapes the plan of N ranks (without --ranks doctor checks this "
                         "process only)");
  if (f.measure && !f.from.empty())
    throw InputError("--measure and --from both give measurements; give one (--from uses a finished run)");
  if (f.measure && !f.facts.empty())
    throw InputError("--measure measures this machine and --facts describes another; give one of them");
}

// --facts' fact set (doctor --json's output, or its "facts"), else this machine's.
doctor::Facts facts_to_check(const std::string& path) {
  if (path.empty()) return doctor::collect_facts();
  std::string text;
  try {
    // A fact set is kilobytes: a FIFO, a device or anything larger is refused in one line of its own.
    text = read_input_limited(path, size_t{64} << 20, "give --facts a file doctor --json wrote");
  } catch (const RuntimeError& e) {
    throw InputError("--facts " + path + ": " + e.what() + "; give a file doctor --json wrote");
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError("--facts " + path + ": not valid JSON; give doctor --json's output");
  const std::string schema = j.is_object() && j.contains("schema") && j["schema"].is_string() ? j["schema"] : "";
  if (schema.starts_with("coldstart.bench/"))
    throw InputError("--facts " + path + ": a bench result, not a fact set; give it to --from instead");
  try {
    return doctor::facts_from_json(j.is_object() && j.contains("facts") ? j["facts"] : j);
  } catch (const InputError& e) {
    throw InputError("--facts " + path + ": " + e.what());
  }
}

// --ranks' plan as a spec: a dry run of N ranks under one launch model, checked.
BenchSpec plan_spec(DoctorFlags& f) {
  BenchSpec dry;
  dry.launcher = lab::parse_enum<Launcher>(f.launcher, "--launcher");
  const bool ray = dry.launcher == Launcher::ray;
  if (!f.ray_address.empty() && !ray) throw InputError("--ray-address needs --launcher ray");
  if (ray && f.mode == "isolated") f.mode = "ray";  // the masked model, as Ray gives it
  Mode mode = lab::parse_mode(f.mode, "--mode");
  if (is_ray_mode(mode) != ray)
    throw InputError("--mode " + f.mode +
                     (ray ? ": under --launcher ray use ray or ray-noset" : ": needs --launcher ray"));
  if (f.ranks < 0 || f.ranks > 256)
    throw InputError("--ranks " + std::to_string(f.ranks) + ": give 1 to 256 (one process per rank is started)");
  dry.dry_run = true;
  dry.trials = 1;
  dry.modes = {mode};
  dry.ray_address = f.ray_address;
  dry.env = {lab::parse_env_axis("NCCL_CUMEM_ENABLE=")};
  return dry;
}

// What each of --ranks' ranks would see: the plan run dry, in a scratch folder.
std::vector<doctor::RankView> plan_ranks(const DoctorFlags& f, BenchSpec dry, lab::BenchOptions quiet,
                                         const doctor::Facts& facts) {
  if (f.ranks == 0) return {};
  const Mode mode = dry.modes.front();
  if (!f.visible.empty()) {
    if (mode != Mode::explicit_list) throw InputError("--visible goes with --mode explicit");
    dry.explicit_lists = lab::parse_explicit_lists(f.visible);
  } else if (mode == Mode::explicit_list) {
    throw InputError("--mode explicit needs --visible with one device list per rank, e.g. --visible 0,1/1,0");
  }
  quiet.gpus = f.ranks;
  TempDir scratch("coldstart-doctor-");  // nothing is left behind
  quiet.out_dir = scratch.path() + "/plan";
  Notes notes;
  quiet.observer = &notes;
  return doctor::rank_views(run_bench(dry, quiet), facts);
}

// The measurements for the advice: --from's run, or --measure's short bench (isolated, cuMem on vs off, 3 trials).
std::optional<BenchResults> doctor_measurements(const DoctorFlags& f, const doctor::Facts& facts,
                                                lab::BenchOptions opts) {
  if (!f.from.empty()) return load_bench_results(f.from);
  if (!f.measure) return std::nullopt;
  if (!facts.cuda.available)
    throw lab::NoGpuError("doctor --measure runs a short bench, which needs a GPU (" + facts.cuda.problem +
                          "); leave --measure out, or give --from a results.json measured on a GPU node");
  BenchSpec spec;
  spec.modes = {Mode::isolated};
  spec.env = {lab::parse_env_axis("NCCL_CUMEM_ENABLE=,0")};
  spec.trials = 3;
  spec.nccl_logs = {NcclLog::off};
  opts.gpus = f.ranks;
  TempDir scratch("coldstart-doctor-");  // nothing is left behind
  opts.out_dir = scratch.path() + "/measure";
  TerminalProgress progress(std::cerr, false);
  opts.observer = &progress;
  std::cerr << "doctor: measuring (isolated, cuMem on vs NCCL_CUMEM_ENABLE=0, 3 trials each)\n";
  return run_bench(spec, opts);
}

int run_doctor(DoctorFlags& f) {
  check_doctor_flags(f);
  const doctor::Facts facts = facts_to_check(f.facts);
  BenchSpec dry = plan_spec(f);
  lab::BenchOptions quiet;
  quiet.worker_command = {self_exe(), "worker"};
  const std::vector<doctor::RankView> ranks = plan_ranks(f, std::move(dry), quiet, facts);
  const std::optional<BenchResults> measured = doctor_measurements(f, facts, quiet);
  auto findings = doctor::evaluate({&facts, ranks, measured ? &*measured : nullptr});
  if (f.json)
    std::cout << dump_json(doctor::report_json(facts, ranks, findings), 1) << "\n";
  else
    std::cout << doctor::render_report(facts, ranks, findings);
  return 0;
}
}  // namespace

Run add_doctor(CLI::App& app) {
  auto f = std::make_shared<DoctorFlags>();
  add_doctor_flags(app, *f);
  CLI::App* net =
      app.add_subcommand("net",
                         "The network layers between this process and what it must reach (sandbox, WSL, "
                         "name, route, gateway, proxy, connection, peers): the first broken one and its fix");
  Run net_run = add_doctor_net(*net);
  return [f, net, net_run]() { return net->parsed() ? net_run() : run_doctor(*f); };
}

}  // namespace coldstart::cli
