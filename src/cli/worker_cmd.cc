#include <arpa/inet.h>
#include <netdb.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "coord/net.h"
#include "lab/external.h"
#include "lab/flags.h"
#include "launch/external.h"
#include "util/error.h"
#include "util/strings.h"
#include "worker/worker.h"

namespace coldstart::cli {
namespace {
struct WorkerFlags {
  WorkerOptions o;
  int rank = -1, nranks = -1, device = -1;
  std::string coord, collective = "all_reduce", groups = "world", startup = "none";
  double timeout_s = 600;
  std::string out = "coldstart-out/external", bind;
  bool mask = false;
  std::vector<std::string> argv;
};

// An IPv4 address for rank 0 to listen on: the host the other ranks were told to reach.
std::string listen_address(const std::string& host) {
  if (host == "localhost" || host == "127.0.0.1" || host.empty()) return "127.0.0.1";
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res)
    throw InputError("coordinator host " + host + " does not resolve; give rank 0's address with --coord HOST:PORT");
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
  freeaddrinfo(res);
  return buf;
}

// Under --mask (an outside launcher that gives every rank every GPU, like torchrun): keep only this rank's GPU, as
// Ray does, before CUDA reads the variable.
void mask_to_local_gpu(int local_rank) {
  std::string own = std::to_string(local_rank);
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"); cvd && *cvd) {
    auto list = split(cvd, ',');
    if (static_cast<size_t>(local_rank) >= list.size())
      throw InputError("--mask: CUDA_VISIBLE_DEVICES=" + std::string(cvd) + " has no entry for local rank " + own);
    own = std::string(trim(list[static_cast<size_t>(local_rank)]));
  }
  ::setenv("CUDA_VISIBLE_DEVICES", own.c_str(), 1);
}

int run_under_launcher(WorkerFlags& f, int64_t main_entry_ns) {
  auto env = [](const char* k) { return static_cast<const char*>(std::getenv(k)); };
  auto who = detect_launcher(env);
  if (!who)
    throw InputError(
        "worker: no --rank and no launcher in the environment (torchrun's RANK/WORLD_SIZE, Slurm's "
        "SLURM_PROCID/SLURM_NTASKS, Open MPI's OMPI_COMM_WORLD_RANK, PMI_RANK/PMI_SIZE); give --rank, "
        "--nranks and --coord, or start it with one of those launchers");
  ExternalRun run;
  run.who = *who;
  run.out_dir = f.out;
  run.masked = f.mask;
  run.timeout_s = f.timeout_s;
  run.argv = f.argv;
  WorkerOptions& o = run.worker;
  o = f.o;
  o.rank = who->rank;
  o.nranks = who->world;
  o.trial = 0;
  if (f.mask) mask_to_local_gpu(who->local_rank);
  // The rank's GPU: its local rank among the GPUs it sees, or 0 when it sees only its own (Ray, --mask).
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool sees_one = cvd && *cvd && split(cvd, ',').size() == 1;
  o.device = f.device >= 0 ? f.device : sees_one ? 0 : who->local_rank;

  std::string host = who->coord_host;
  int port = who->coord_port;
  if (!f.coord.empty()) std::tie(host, port) = coord::parse_host_port(f.coord, "--coord");
  if (host.empty()) {
    if (who->local_world > 0 && who->local_world == who->world)
      host = "127.0.0.1";  // one node
    else
      throw InputError("worker: " + who->launcher +
                       " does not say where rank 0 runs; give --coord HOST:PORT (rank 0's "
                       "host and a free port, the same on every rank)");
  }
  if (port == 0) {
    if (const char* p = std::getenv("COLDSTART_COORD_PORT"); p && *p) {
      auto v = parse_int(p);
      if (!v || *v <= 0 || *v > 65535) throw InputError(std::string("COLDSTART_COORD_PORT=") + p + ": expected a port");
      port = static_cast<int>(*v);
    } else {
      port = derived_port(who->job_id);
    }
  }
  o.coord_host = host;
  o.coord_port = static_cast<uint16_t>(port);
  o.token = external_token(*who, env);
  o.launcher = {{"name", who->launcher}, {"local_rank", std::to_string(who->local_rank)}};
  if (who->local_world > 0) o.launcher["local_world"] = std::to_string(who->local_world);
  if (!who->job_id.empty()) o.launcher["job_id"] = who->job_id;
  run.bind = f.bind.empty() ? listen_address(host) : f.bind;
  return run_external(run, main_entry_ns);
}

}  // namespace

Run add_worker(CLI::App& app, int argc, char** argv, int64_t main_entry_ns) {
  auto f = std::make_shared<WorkerFlags>();
  app.add_option("--rank", f->rank, "This rank (default: from the launcher's environment)");
  app.add_option("--nranks", f->nranks, "Ranks in the job (default: from the launcher's environment)");
  app.add_option("--device", f->device,
                 "CUDA device index to select (default: the local rank, or 0 if it sees one GPU)");
  app.add_option("--trial", f->o.trial, "Trial id the coordinator expects");
  app.add_option("--coord", f->coord, "Coordinator HOST:PORT (under a launcher: rank 0's, by default found from it)");
  app.add_option("--collective", f->collective, "Collective to time");
  app.add_option("--size", f->o.size_bytes, "Bytes for the steady-state measurement");
  app.add_option("--groups", f->groups, "world | split:K | fresh:K");
  app.add_option("--iters", f->o.steady_iters, "Steady-state iterations");
  app.add_option("--warmup", f->o.warmup_iters, "Steady-state warm-up iterations");
  app.add_option("--nccl-lib", f->o.nccl_lib, "NCCL library to load");
  app.add_option("--timeout", f->timeout_s, "Seconds to wait for peers at each coordinator step");
  app.add_option("--out", f->out, "Under a launcher: where rank 0 writes results (trials accumulate)")
      ->capture_default_str();
  app.add_option("--bind", f->bind, "Under a launcher: the address rank 0's coordinator listens on");
  app.add_flag("--mask", f->mask,
               "Under a launcher: show each rank only its own GPU (CUDA_VISIBLE_DEVICES), as Ray does");
  app.add_flag("--dry-run", f->o.dry_run, "Speak the protocol without touching CUDA or NCCL");
  app.add_option("--startup", f->startup, "The job's own work before the first collective: none, cpu:300ms, h2d:4GiB");
  app.add_flag("--prewarm", f->o.prewarm, "A 1-element all-reduce on a background thread during the start-up work");
  app.add_flag("--split-share", f->o.split_share, "--groups split:K with splitShare=1");
  app.add_flag("--coverage", f->o.coverage, "Time the first call of other collectives and sizes after the first");
  return [f, argc, argv, main_entry_ns]() {
    f->argv.assign(argv, argv + argc);
    f->o.collective = parse_collective(f->collective);
    f->o.groups = parse_groups(f->groups);
    f->o.startup = parse_startup(f->startup);
    if (!(f->timeout_s > 0 && f->timeout_s <= 24 * 3600))
      throw InputError("worker --timeout " + std::to_string(f->timeout_s) + ": give seconds from 0 to 86400");
    f->o.wait_timeout_ms = static_cast<int>(f->timeout_s * 1000);
    // COLDSTART_LAUNCHER_INFO: what a launcher wrapper (coldstart's Ray actor) learned about this rank.
    if (const char* info = std::getenv("COLDSTART_LAUNCHER_INFO"); info && *info) {
      auto j = nlohmann::json::parse(info, nullptr, false);
      if (j.is_object())
        for (auto& [k, v] : j.items()) f->o.launcher[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
    if (f->rank < 0 && f->nranks < 0) return run_under_launcher(*f, main_entry_ns);
    if (f->rank < 0 || f->nranks < 1)
      throw InputError("worker: give both --rank and --nranks (or neither, under a launcher)");
    if (f->coord.empty()) throw InputError("worker: --coord HOST:PORT is required with --rank");
    f->o.rank = f->rank;
    f->o.nranks = f->nranks;
    f->o.device = f->device >= 0 ? f->device : 0;
    std::tie(f->o.coord_host, f->o.coord_port) = coord::parse_host_port(f->coord, "--coord");
    const char* token = std::getenv("COLDSTART_TOKEN");
    if (!token || !*token) throw InputError("worker: COLDSTART_TOKEN is not set; the lab passes it to every rank");
    f->o.token = token;
    return run_worker(f->o, main_entry_ns);
  };
}

}  // namespace coldstart::cli
