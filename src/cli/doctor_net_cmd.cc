// coldstart doctor net: the network layers between this process and what it must reach, inside out; with --peers,
// every rank of a launched job against every other; with --compare, where two runs first differ. Thin: the flags are
// checked here, net::diagnose decides the verdict (the peers' matrix with it), and this file renders it and picks the
// exit code.
#include <sys/stat.h>

#include <cstdlib>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "net/diagnose.h"
#include "net/report.h"
#include "report/net_compare.h"
#include "report/net_text.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::cli {
namespace {

struct DoctorNetFlags {
  std::vector<std::string> targets, compare;
  bool json = false, peers = false;
  std::string timeout = "2s", wait = "60s", root = "/", cacert, coord, peers_address;
};

// The options whose presence is checked against the others: those that go with --peers only, and those that shape a
// new run (with --compare, which reads two finished ones, they would change nothing).
struct FlagGroups {
  std::vector<const CLI::Option*> peer_flags, run_flags;
};

FlagGroups add_flags(CLI::App& app, DoctorNetFlags& f) {
  FlagGroups groups;
  app.add_option("targets", f.targets,
                 "URLs (https://, wss://, http://, ws://, grpc://) or HOST:PORT; none: MASTER_ADDR:MASTER_PORT, "
                 "RAY_ADDRESS and each proxy variable's endpoint");
  app.add_flag("--json", f.json, "Print JSON (schema coldstart.net/1)");
  app.add_option("--timeout", f.timeout, "Each probe's bound: 2s, 500ms (0.1s to 60s)")->capture_default_str();
  app.add_flag("--peers", f.peers,
               "Under a launcher (torchrun, srun, mpirun, Ray): every rank connects to every other on the interface "
               "NCCL would use (Gloo's shown beside it); rank 0 prints the matrix. The targets are checked too "
               "(none given: the environment's, MASTER_ADDR's among them)");
  groups.peer_flags.push_back(app.add_option("--wait", f.wait, "--peers: how long ranks wait for each other (1s to 1h)")
                                  ->capture_default_str());
  groups.peer_flags.push_back(app.add_option(
      "--coord", f.coord, "--peers: rank 0's HOST:PORT to meet at (default: from the launcher, as coldstart worker)"));
  groups.peer_flags.push_back(app.add_option("--peers-address", f.peers_address,
                                             "--peers: listen and connect from this address instead of NCCL's choice"));
  app.add_option("--compare", f.compare,
                 "Two doctor net --json files (inside a sandbox, outside it): the first layer "
                 "where they differ")
      ->expected(2);
  app.add_option("--root", f.root,
                 "Read the platform's files (osrelease, resolv.conf, wslinfo's answer as cmd/wslinfo.txt) from a "
                 "recorded folder laid over /, for tests or another machine's files")
      ->capture_default_str();
  app.add_option("--cacert", f.cacert,
                 "A CA bundle the TLS check trusts instead of the system's (a private CA, an intercepting proxy's)");
  groups.run_flags = {app.get_option("--timeout"), app.get_option("--root"), app.get_option("--cacert"),
                      app.get_option("--peers")};
  return groups;
}

double duration_flag(const std::string& flag, const std::string& text, double lo, double hi) {
  auto s = parse_duration(text);
  if (!s || *s < lo || *s > hi)
    throw InputError(flag + " " + shown(text) + ": give a duration from " + format_seconds(lo) + " to " +
                     format_seconds(hi) + ", e.g. 2s or 500ms");
  return *s;
}

const std::string& checked_cacert(const std::string& path) {
  if (!path.empty()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw InputError("--cacert " + shown(path) + ": not a readable file; give a PEM CA bundle");
  }
  return path;
}

// A report written by doctor net --json, read by the one loader (net/report.h: its bound, a FIFO or a device refused).
net::NetReport load_report(const std::string& path) {
  try {
    return net::load_net_report(path);
  } catch (const InputError& e) {
    throw InputError(std::string("--compare ") + e.what());
  }
}

// --compare: the first layer where two finished runs differ; exit 1 when they do.
int run_compare(const DoctorNetFlags& f, const std::vector<const CLI::Option*>& run_flags) {
  if (!f.targets.empty()) throw InputError("--compare reads two finished runs; give it no targets");
  for (const CLI::Option* o : run_flags)
    if (o->count() > 0)
      throw InputError(o->get_name() + " shapes a new run; --compare reads two finished ones (leave it out)");
  net::NetReport a = load_report(f.compare[0]), b = load_report(f.compare[1]);
  report::Difference d = report::compare_reports(a, b);
  if (f.json)
    std::cout << dump_json(report::to_json(d, f.compare[0], f.compare[1]), 1) << "\n";
  else
    std::cout << report::render_difference(d, f.compare[0], f.compare[1]);
  return d.found ? 1 : 0;
}

const char* process_env(const char* name) { return std::getenv(name); }

// --peers: this rank's part of the matrix, run before any target is probed so that no rank waits on another's probes.
net::PeerMatrix meet_peers(const DoctorNetFlags& f, double timeout_s, double wait_s, const net::GetEnv& env) {
  net::PeerOptions po;
  po.timeout_s = timeout_s;
  po.wait_s = wait_s;
  po.env = env;
  po.coord = f.coord;
  po.address = f.peers_address;
  return net::run_peers(po);
}

// A new run: the environment checked first, the targets (given, else the environment's), this host's facts, under
// --peers the matrix, then diagnose and its verdict, rendered; exit 1 when the verdict is broken.
int run_diagnosis(const DoctorNetFlags& f, net::NetOptions opts, double wait_s) {
  {
    struct stat st {};
    if (::stat(f.root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw InputError("--root " + shown(f.root) + ": not a folder; give a recorded root (its proc/, etc/, cmd/)");
  }
  // Every value read from the environment is checked before any target is probed or any rank meets another: one
  // holding a control character is bad input, named in one line (the launchers' too under --peers).
  const net::GetEnv env = process_env;
  net::check_environment(env, f.peers);
  std::vector<net::Target> targets;
  for (const std::string& t : f.targets) targets.push_back(net::parse_target(t));
  // Under --peers too: a proxy in the way of MASTER_ADDR (or a loopback MASTER_ADDR) is the environment's target's.
  if (targets.empty()) targets = net::env_targets(env);
  opts.before_job = f.peers;
  const net::HostFacts facts = net::collect_host(net::Root(f.root));
  std::optional<net::PeerMatrix> peers;
  if (f.peers) peers = meet_peers(f, opts.timeout_s, wait_s, env);
  const net::NetReport report = net::diagnose(targets, facts, env, opts, std::move(peers));
  if (f.json)
    std::cout << dump_json(net::to_json(report), 1) << "\n";
  else
    std::cout << report::render_text(report);
  return report.verdict.status == net::Status::broken ? 1 : 0;
}

}  // namespace

Run add_doctor_net(CLI::App& app) {
  auto f = std::make_shared<DoctorNetFlags>();
  const FlagGroups groups = add_flags(app, *f);
  return [f, groups]() {
    if (!f->peers)
      for (const CLI::Option* o : groups.peer_flags)
        if (o->count() > 0) throw InputError(o->get_name() + " goes with --peers (under a launcher, one per rank)");
    net::NetOptions opts;
    opts.timeout_s = duration_flag("--timeout", f->timeout, 0.1, 60);
    const double wait_s = duration_flag("--wait", f->wait, 1, 3600);
    opts.ca_file = checked_cacert(f->cacert);
    if (!f->compare.empty()) return run_compare(*f, groups.run_flags);
    return run_diagnosis(*f, opts, wait_s);
  };
}

}  // namespace coldstart::cli
