#include <arpa/inet.h>
#include <netdb.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "coord/address.h"
#include "lab/external.h"
#include "lab/flags.h"
#include "launch/external.h"
#include "util/error.h"
#include "util/strings.h"
#include "worker/args.h"
#include "worker/worker.h"

namespace coldstart::cli {
namespace {
struct WorkerFlags {
  worker::WorkerArgs args;
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

int run_under_launcher(const WorkerFlags& f, const worker::WorkerOptions& given, int64_t main_entry_ns) {
  const worker::WorkerArgs& a = f.args;
  auto env = [](const char* k) { return static_cast<const char*>(std::getenv(k)); };
  auto who = launch::detect_launcher(env);
  if (!who)
    throw InputError(fmt::format(
        "worker: no --rank and no launcher in the environment ({}); give --rank, --nranks and --coord, or start it "
        "with one of those launchers",
        launch::kLauncherVariables));
  lab::ExternalRun run;
  run.who = *who;
  run.out_dir = a.out;
  run.masked = a.mask;
  run.timeout_s = a.timeout_s;
  run.argv = f.argv;
  worker::WorkerOptions& o = run.worker;
  o = given;
  o.rank = who->rank;
  o.nranks = who->world;
  o.trial = 0;
  if (a.mask) mask_to_local_gpu(who->local_rank);
  // The rank's GPU: its local rank among the GPUs it sees, or 0 when it sees only its own (Ray, --mask).
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool sees_one = cvd && *cvd && split(cvd, ',').size() == 1;
  o.device = a.device >= 0 ? a.device : sees_one ? 0 : who->local_rank;

  std::string host = who->coord_host;
  int port = who->coord_port;
  if (!a.coord.empty()) std::tie(host, port) = coord::parse_host_port(a.coord, "--coord");
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
      port = launch::derived_port(who->job_id);
    }
  }
  o.coord_host = host;
  o.coord_port = static_cast<uint16_t>(port);
  o.token = launch::external_token(*who, env);
  o.launcher = {{"name", who->launcher}, {"local_rank", std::to_string(who->local_rank)}};
  if (who->local_world > 0) o.launcher["local_world"] = std::to_string(who->local_world);
  if (!who->job_id.empty()) o.launcher["job_id"] = who->job_id;
  run.bind = a.bind.empty() ? listen_address(host) : a.bind;
  return run_external(run, main_entry_ns);
}

// The flags read into the worker's options (each typed value with its flag's own error), with what a launcher
// wrapper passed in COLDSTART_LAUNCHER_INFO; the rank, its peers and its GPU are settled by the caller.
worker::WorkerOptions options_of(const worker::WorkerArgs& a) {
  worker::WorkerOptions o;
  o.trial = a.trial;
  o.size_bytes = a.size;
  o.steady_iters = a.iters;
  o.warmup_iters = a.warmup;
  o.nccl_lib = a.nccl_lib;
  o.dry_run = a.dry_run;
  o.prewarm = a.prewarm;
  o.split_share = a.split_share;
  o.coverage = a.coverage;
  o.collective = lab::parse_collective(a.collective);
  o.groups = lab::parse_groups(a.groups);
  o.startup = lab::parse_startup(a.startup);
  if (!(a.timeout_s > 0 && a.timeout_s <= 24 * 3600))
    throw InputError("worker --timeout " + std::to_string(a.timeout_s) + ": give seconds from 0 to 86400");
  o.wait_timeout_ms = static_cast<int>(a.timeout_s * 1000);
  // COLDSTART_LAUNCHER_INFO: what a launcher wrapper (coldstart's Ray actor) learned about this rank.
  if (const char* info = std::getenv("COLDSTART_LAUNCHER_INFO"); info && *info) {
    auto j = nlohmann::json::parse(info, nullptr, false);
    if (j.is_object())
      for (auto& [k, v] : j.items()) o.launcher[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return o;
}

}  // namespace

Run add_worker(CLI::App& app, int argc, char** argv, int64_t main_entry_ns) {
  auto f = std::make_shared<WorkerFlags>();
  worker::add_worker_flags(app, f->args);
  return [f, argc, argv, main_entry_ns]() {
    // NCCL's log goes to this process's standard output (bench's ranks write it into their output file): a line
    // at a time, so that what a rank killed at its deadline logged is kept.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    f->argv.assign(argv, argv + argc);
    const worker::WorkerArgs& a = f->args;
    worker::WorkerOptions o = options_of(a);
    if (a.rank < 0 && a.nranks < 0) return run_under_launcher(*f, o, main_entry_ns);
    if (a.rank < 0 || a.nranks < 1)
      throw InputError("worker: give both --rank and --nranks (or neither, under a launcher)");
    if (a.coord.empty()) throw InputError("worker: --coord HOST:PORT is required with --rank");
    o.rank = a.rank;
    o.nranks = a.nranks;
    o.device = a.device >= 0 ? a.device : 0;
    std::tie(o.coord_host, o.coord_port) = coord::parse_host_port(a.coord, "--coord");
    const char* token = std::getenv("COLDSTART_TOKEN");
    if (!token || !*token) throw InputError("worker: COLDSTART_TOKEN is not set; the lab passes it to every rank");
    o.token = token;
    return worker::run_worker(o, main_entry_ns);
  };
}

}  // namespace coldstart::cli
