#include <cstdlib>

#include "cli/commands.h"
#include "util/error.h"
#include "util/strings.h"
#include "worker/worker.h"

namespace coldstart::cli {
namespace {
struct WorkerFlags {
  WorkerOptions o;
  std::string coord, collective = "all_reduce", groups = "world";
  double timeout_s = 600;
};
}  // namespace

Run add_worker(CLI::App& app, int64_t main_entry_ns) {
  auto f = std::make_shared<WorkerFlags>();
  app.add_option("--rank", f->o.rank, "This rank")->required();
  app.add_option("--nranks", f->o.nranks, "Ranks in the job")->required();
  app.add_option("--device", f->o.device, "CUDA device index to select");
  app.add_option("--trial", f->o.trial, "Trial id the coordinator expects");
  app.add_option("--coord", f->coord, "Coordinator HOST:PORT")->required();
  app.add_option("--collective", f->collective, "Collective to time");
  app.add_option("--size", f->o.size_bytes, "Bytes for the steady-state measurement");
  app.add_option("--groups", f->groups, "world | split:K | fresh:K");
  app.add_option("--iters", f->o.steady_iters, "Steady-state iterations");
  app.add_option("--warmup", f->o.warmup_iters, "Steady-state warm-up iterations");
  app.add_option("--nccl-lib", f->o.nccl_lib, "NCCL library to load");
  app.add_option("--timeout", f->timeout_s, "Seconds to wait for peers at each coordinator step");
  app.add_flag("--dry-run", f->o.dry_run, "Speak the protocol without touching CUDA or NCCL");
  return [f, main_entry_ns]() {
    auto colon = f->coord.rfind(':');
    auto port = colon == std::string::npos ? std::nullopt : parse_int(f->coord.substr(colon + 1));
    if (!port || *port <= 0 || *port > 65535) throw InputError("--coord " + f->coord + ": expected HOST:PORT");
    f->o.coord_host = f->coord.substr(0, colon);
    f->o.coord_port = static_cast<uint16_t>(*port);
    f->o.collective = parse_collective(f->collective);
    f->o.groups = parse_groups(f->groups);
    f->o.wait_timeout_ms = static_cast<int>(f->timeout_s * 1000);
    const char* token = std::getenv("COLDSTART_TOKEN");
    if (!token || !*token) throw InputError("worker: COLDSTART_TOKEN is not set; the lab passes it to every rank");
    f->o.token = token;
    return run_worker(f->o, main_entry_ns);
  };
}

}  // namespace coldstart::cli
