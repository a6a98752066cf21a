// doctor net's method around the targets' layers (target_check.h): the process's own layers (context, platform), the
// verdict across the process, the targets and the peers, decided once, and diagnose, which checks the targets on a
// bounded pool of threads.
#include "net/diagnose.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>
#include <thread>

#include "coord/address.h"
#include "net/probe.h"
#include "net/target_check.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

std::string interfaces_line(const std::vector<Interface>& ifs) {
  std::vector<std::string> parts;
  for (const Interface& i : ifs) {
    std::string addrs = join(i.ipv4, ", ");
    if (addrs.empty()) addrs = join(i.ipv6, ", ");
    parts.push_back(i.name + (i.up ? "" : " (down)") + (addrs.empty() ? "" : " " + addrs));
  }
  return parts.empty() ? "no interfaces" : join(parts, "; ");
}

// The context layer: whether this process may open a socket, and in which network namespace it runs.
Check check_context(const ProcessContext& context) {
  std::vector<std::string> evidence = {
      "network namespace " + (context.netns.empty() ? "unknown" : context.netns),
      "parent's: " + (context.parent_netns.empty() ? context.parent_error : context.parent_netns),
      "PID 1's: " + (context.init_netns.empty() ? context.init_error : context.init_netns),
      "interfaces: " + interfaces_line(context.interfaces)};
  const std::string outside = !context.parent_netns.empty() && context.parent_netns != context.netns
                                  ? context.parent_netns
                              : !context.init_netns.empty() && context.init_netns != context.netns ? context.init_netns
                                                                                                   : "";
  if (context.socket_errno != 0) {
    evidence.push_back("socket(AF_INET, SOCK_STREAM): " + errno_name(context.socket_errno));
    return make_check(Layer::context, Status::broken,
                      "this process may not open a network socket (" + errno_name(context.socket_errno) +
                          "): a sandbox's system-call filter forbids it",
                      evidence,
                      "run the command outside the sandbox, or allow network access in the sandbox's settings");
  }
  if (context.only_loopback())
    return make_check(Layer::context, Status::broken,
                      "this process's network namespace has only lo: an isolated sandbox" +
                          (outside.empty() ? std::string() : " (the parent or PID 1 is in " + outside + ")"),
                      evidence,
                      "run it outside the sandbox, or give the sandbox network access; to see the difference, run "
                      "doctor net --json inside and outside and compare the two with doctor net --compare A B");
  return make_check(Layer::context, Status::ok,
                    (outside.empty() ? "the host's network namespace" : "a network namespace of its own") +
                        std::string(", ") + std::to_string(context.interfaces.size()) + " interfaces",
                    evidence);
}

// The platform layer: WSL and its networking mode, or a container.
Check check_platform(const Platform& platform) {
  std::vector<std::string> evidence;
  if (!platform.osrelease.empty()) evidence.push_back("kernel " + platform.osrelease);
  if (!platform.wsl_mode.empty())
    evidence.push_back("networking mode " + platform.wsl_mode + " (from " + platform.wsl_mode_source + ")");
  if (!platform.windows_host.empty()) evidence.push_back("Windows host (default gateway): " + platform.windows_host);
  if (!platform.container.empty()) evidence.push_back("container: " + platform.container);
  if (platform.wsl && platform.wsl_mode == "none")
    return make_check(
        Layer::platform, Status::broken, "WSL with networking mode none: it has no network", evidence,
        "set networkingMode=nat or mirrored under [wsl2] in %UserProfile%\\.wslconfig, then wsl --shutdown");
  if (platform.wsl) {
    std::string summary = "WSL" + platform.wsl_version + ", networking mode " +
                          (platform.wsl_mode.empty() ? "unknown" : platform.wsl_mode);
    if (platform.wsl_mode == "nat" || platform.wsl_mode.empty())
      summary += ": Windows is the gateway" +
                 (platform.windows_host.empty() ? std::string() : " " + platform.windows_host) +
                 ", and Windows' 127.0.0.1 is not this 127.0.0.1";
    return make_check(Layer::platform, Status::ok, summary, evidence);
  }
  return make_check(Layer::platform, Status::ok,
                    platform.container.empty() ? "Linux; no WSL, no container seen"
                                               : "Linux, in a " + platform.container + " container",
                    evidence);
}

}  // namespace

std::vector<Check> check_process(const HostFacts& facts) {
  return {check_context(facts.context), check_platform(facts.platform)};
}

namespace {

// The first failing pair of the matrix, broken at its cell's layer.
std::optional<Verdict> peers_verdict(const PeerMatrix& m) {
  for (size_t from = 0; from < m.cells.size(); ++from)
    for (size_t to = 0; to < m.cells[from].size(); ++to) {
      const PeerCell& c = m.cells[from][to];
      if (from == to || c.ok || from >= m.endpoints.size() || to >= m.endpoints.size()) continue;
      const PeerEndpoint& a = m.endpoints[from];
      const PeerEndpoint& b = m.endpoints[to];
      Check check{c.layer,
                  Status::broken,
                  "rank " + std::to_string(from) + " (" + a.host + ", " + a.interface + ") cannot reach rank " +
                      std::to_string(to) + " at " + coord::host_port(b.address, static_cast<uint16_t>(b.port)) + ": " +
                      c.why,
                  {std::to_string(m.failing_pairs()) + " of " + std::to_string(m.world * (m.world - 1)) +
                   " pairs failing (the matrix above)"},
                  c.layer == Layer::route || c.layer == Layer::context
                      ? "give every rank an interface its peers reach: NCCL_SOCKET_IFNAME=<that interface> (and "
                        "GLOO_SOCKET_IFNAME), and no loopback address for a host name in /etc/hosts"
                      : "let the ranks reach each other on the ports NCCL and Gloo use: check the firewalls (nft list "
                        "ruleset) and security groups between " +
                            a.host + " and " + b.host + ", or pick another interface with NCCL_SOCKET_IFNAME"};
      return Verdict{Status::broken, "peers " + std::to_string(from) + " -> " + std::to_string(to), check};
    }
  return std::nullopt;
}

// A rank whose Gloo would listen elsewhere than the matrix connected (or finds no interface at all): the job's Gloo
// connections take a path nobody checked.
std::optional<Verdict> peers_warning(const PeerMatrix& m) {
  std::vector<std::string> ranks;
  const PeerEndpoint* first = nullptr;
  for (const PeerEndpoint& e : m.endpoints) {
    if (!e.gloo_differs() && !(e.gloo_interface.empty() && !e.gloo_problem.empty())) continue;
    ranks.push_back(std::to_string(e.rank));
    if (!first) first = &e;
  }
  if (!first) return std::nullopt;
  const PeerEndpoint& e = *first;
  const std::string probed = e.interface.empty() ? e.address : e.interface + " (" + e.address + ")";
  Check check{Layer::route,
              Status::warn,
              e.gloo_interface.empty()
                  ? "rank " + std::to_string(e.rank) + " (" + e.host + "): Gloo finds no interface: " + e.gloo_problem
                  : "rank " + std::to_string(e.rank) + " (" + e.host + "): Gloo would use " + e.gloo_interface + " (" +
                        e.gloo_address + "), not " + probed + " where the matrix connected: Gloo's path is not checked",
              {"Gloo elsewhere on rank" + std::string(ranks.size() == 1 ? " " : "s ") + join(ranks, ", ") + " of " +
               std::to_string(m.world) + " (the endpoints above)"},
              e.interface.empty() ? "give Gloo the interface of " + e.address + " with GLOO_SOCKET_IFNAME (exact names)"
                                  : "set GLOO_SOCKET_IFNAME=" + e.interface +
                                        " (Gloo takes exact names) so that Gloo uses the interface "
                                        "the matrix checked, or NCCL_SOCKET_IFNAME to Gloo's and run --peers again"};
  if (!e.gloo_problem.empty() && !e.gloo_interface.empty()) check.evidence.push_back("Gloo: " + e.gloo_problem);
  return Verdict{Status::warn, "peers rank " + std::to_string(e.rank), check};
}

}  // namespace

Verdict decide_verdict(const NetReport& r) {
  for (Status want : {Status::broken, Status::warn}) {
    for (const Check& c : r.process)
      if (c.status == want) return Verdict{want, "", c};
    for (const TargetReport& t : r.targets)
      for (const Check& c : t.layers)
        if (c.status == want) return Verdict{want, t.target.text, c};
    if (want == Status::broken && r.peers)
      if (auto v = peers_verdict(*r.peers)) return *v;
    if (want == Status::warn && r.peers)
      if (auto v = peers_warning(*r.peers)) return *v;
  }
  Verdict v;
  v.check.summary = r.peers ? "every rank reaches every other (" + std::to_string(r.peers->world) + " ranks)"
                    : r.targets.empty() ? "this process's network is fine; no target was checked"
                                        : "every layer is fine for " + std::to_string(r.targets.size()) +
                                              (r.targets.size() == 1 ? " target" : " targets");
  return v;
}

namespace {

// The targets at once, on at most kMaxTargetWorkers threads taking the next target as each finishes: a dead network
// costs one timeout per that many targets, and hundreds of targets never ask for hundreds of threads (each probe may
// start one or two of its own). A thread that cannot be started (an address-space or process limit) leaves its share
// to the others; this thread takes targets too, so they are checked even when no thread starts.
std::vector<TargetReport> check_targets(const std::vector<Target>& targets, const HostFacts& facts,
                                        const ProxyEnv& proxies, const IfChoice& nccl, const IfChoice& gloo,
                                        const NetOptions& opts) {
  std::vector<TargetReport> reports(targets.size());
  std::vector<std::exception_ptr> failed(targets.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < targets.size();) {
      try {
        reports[i] = check_target(targets[i], facts, proxies, nccl, gloo, opts);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> workers;
  const size_t helpers = std::min(targets.size(), kMaxTargetWorkers) - (targets.empty() ? 0 : 1);
  workers.reserve(helpers);
  for (size_t i = 0; i < helpers; ++i) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return reports;
}

}  // namespace

NetReport diagnose(const std::vector<Target>& targets, const HostFacts& facts, const GetEnv& env,
                   const NetOptions& opts, std::optional<PeerMatrix> peers) {
  check_environment(env);
  NetReport report;
  report.host = facts.hostname;
  report.facts = facts;
  report.proxy_env = read_proxy_env(env);
  report.nccl = nccl_choice(facts.context.interfaces, env);
  report.gloo = gloo_choice(facts.context.interfaces, env, facts);
  report.process = check_process(facts);
  report.targets = check_targets(targets, facts, report.proxy_env, report.nccl, report.gloo, opts);
  report.peers = std::move(peers);
  if (targets.empty() && !report.peers)  // under --peers the matrix is what is checked
    report.note =
        "no target given and none in the environment (MASTER_ADDR, RAY_ADDRESS, proxy variables): give one, e.g. "
        "coldstart doctor net https://pypi.org/ or HOST:PORT";
  report.verdict = decide_verdict(report);  // the one verdict: the process, the targets, then the peers
  return report;
}

}  // namespace coldstart::net
