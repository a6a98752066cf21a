// coldstart: the NCCL cold-start lab. One binary, one subcommand per job.
#include <iostream>
#include <map>
#include <string_view>

#include "cli/commands.h"
#include "lab/bench.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/strings.h"

// Every error is one line, whatever value it echoes: control characters escaped, at most this long.
constexpr size_t kMaxMessage = 4096;

int main(int argc, char** argv) {
  const int64_t main_entry = coldstart::mono_ns();
  CLI::App app{"coldstart: find where a multi-GPU job's NCCL cold start goes, and how to cut it."};
  app.set_version_flag("--version", COLDSTART_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, coldstart::cli::Run> runs;
  // A rank starts with `coldstart worker`: it builds only its own subcommand, since the time before its first phase
  // counts as the worker's overhead.
  const bool worker_only = argc > 1 && std::string_view(argv[1]) == "worker";
  if (!worker_only) {
    auto* bench =
        app.add_subcommand("bench", "Run launch models side by side on real GPUs and split cold start into phases");
    runs[bench] = coldstart::cli::add_bench(*bench, argc, argv);
    auto* doctor =
        app.add_subcommand("doctor", "Check the three visibility layers and NCCL's setup; give the fix with its cost");
    runs[doctor] = coldstart::cli::add_doctor(*doctor);
    auto* nccllog = app.add_subcommand("nccllog", "Break NCCL's own debug logs down by communicator and phase");
    runs[nccllog] = coldstart::cli::add_nccllog(*nccllog);
    auto* trace = app.add_subcommand(
        "trace", "Run any command with CUDA-call tracing and NCCL logging; merge what every process recorded");
    runs[trace] = coldstart::cli::add_trace(*trace);
    auto* report = app.add_subcommand(
        "report", "Render bench results: table, Markdown, Perfetto trace, HTML; compare a run with a baseline");
    runs[report] = coldstart::cli::add_report(*report);
    auto* nccl = app.add_subcommand(
        "nccl",
        "Build coldstart's patched NCCL for the release PyTorch loads, and say how to load it (build, env, list)");
    runs[nccl] = coldstart::cli::add_nccl(*nccl);
  }
  auto* worker = app.add_subcommand("worker", "One rank of a trial (started by bench, or by torchrun/srun/mpirun)");
  runs[worker] = coldstart::cli::add_worker(*worker, argc, argv, main_entry);

  bool known = false;
  for (const auto& [sub, run] : runs) known |= argc > 1 && sub->get_name() == argv[1];
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::cerr << "coldstart: unknown command '" << coldstart::shown(argv[1])
              << "'; use one of bench, doctor, nccllog, trace, report, nccl, worker (see coldstart --help)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = app.get_subcommands().empty() ? "" : " " + app.get_subcommands().front()->get_name();
    std::cerr << "coldstart" << where << ": " << coldstart::shown(e.what(), kMaxMessage) << " (see coldstart" << where
              << " --help)\n";
    return 2;
  }
  try {
    return runs.at(app.get_subcommands().front())();
  } catch (const coldstart::InputError& e) {
    std::cerr << "coldstart: " << coldstart::shown(e.what(), kMaxMessage) << "\n";
    return 2;
  } catch (const coldstart::Interrupted& e) {
    std::cerr << "coldstart: " << coldstart::shown(e.what(), kMaxMessage) << "\n";
    return 130;
  } catch (const coldstart::lab::NoGpuError& e) {
    std::cerr << "coldstart: " << coldstart::shown(e.what(), kMaxMessage) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "coldstart: " << coldstart::shown(e.what(), kMaxMessage) << "\n";
    return 1;
  }
}
