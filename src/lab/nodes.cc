#include "lab/nodes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "util/clock.h"
#include "util/error.h"
#include "util/process.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {

constexpr const char* kNetnsPrefix = "coldstart-";
constexpr const char* kBridgePrefix = "csbr";  // interface names are at most 15 characters: csbr<pid>
constexpr const char* kVethPrefix = "csv";     // the bridge's end of node k's veth: csv<pid>-<k>

// The kernel's or the tools' words, on one line and short.
std::string node_cmd_said(const RunResult& r) {
  std::string out(trim(r.output));
  for (char& c : out)
    if (c == '\n') c = ' ';
  if (out.size() > 300) out = out.substr(0, 300) + "...";
  return out;
}

// What to do about a command that failed, where its failure has a known cause.
std::string node_cmd_hint(const std::vector<std::string>& argv, const RunResult& r) {
  if (r.end == RunEnd::not_found)
    return fmt::format("; {} is iproute2's: install it (apt-get install iproute2)", argv[0]);
  const std::string out = r.output;
  if (argv[0] == "tc" &&
      (out.find("netem") != std::string::npos || out.find("qdisc kind is unknown") != std::string::npos))
    return "; the kernel has no netem (sch_netem): load it with modprobe sch_netem (in a container, on the host), or "
           "leave --link out";
  if (out.find("Operation not permitted") != std::string::npos)
    return "; network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  return "";
}

void run_node_cmd(const std::vector<std::string>& argv) {
  RunSpec spec;
  spec.argv = argv;
  spec.timeout_s = 20;
  spec.with_stderr = true;
  spec.max_output = 64 << 10;
  RunResult r = run_command(spec);
  if (r.ok()) return;
  std::string out = node_cmd_said(r);
  throw RuntimeError(fmt::format("--nodes: `{}` failed ({}{}){}", join(argv, " "), r.why(),
                                 out.empty() ? "" : ": " + out, node_cmd_hint(argv, r)));
}

// Best effort, for tearing down: what is already gone is no failure.
void run_node_cmd_quietly(const std::vector<std::string>& argv) {
  RunSpec spec;
  spec.argv = argv;
  spec.timeout_s = 20;
  spec.with_stderr = true;
  run_command(spec);
}

std::string node_cmd_output(const std::vector<std::string>& argv) {
  RunSpec spec;
  spec.argv = argv;
  spec.timeout_s = 20;
  spec.max_output = 8 << 20;
  RunResult r = run_command(spec);
  if (!r.ok()) {
    std::string out = node_cmd_said(r);
    throw RuntimeError(fmt::format("--nodes: `{}` failed ({}{}){}", join(argv, " "), r.why(),
                                   out.empty() ? "" : ": " + out, node_cmd_hint(argv, r)));
  }
  return r.output;
}

// Whether the coldstart process that named something after its pid still runs (a pid reused by another program
// does not count).
bool node_owner_alive(long pid) {
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name.starts_with("coldstart");
}

// A free /24 for the bridge: 10.213.X.0/24 with X from the pid, skipping what this host already has.
std::string pick_node_subnet() {
  const std::string addrs = node_cmd_output({"ip", "-4", "-o", "addr", "show"});
  const std::string routes = node_cmd_output({"ip", "-4", "route", "show", "table", "all"});
  for (int i = 0; i < 256; ++i) {
    const int x = static_cast<int>((::getpid() + i) % 256);
    const std::string net = fmt::format("10.213.{}.", x);
    if (addrs.find(" " + net) == std::string::npos && routes.find(net + "0/") == std::string::npos)
      return fmt::format("10.213.{}", x);
  }
  throw RuntimeError("--nodes: no free subnet in 10.213.0.0/16 for the nodes' bridge (every /24 is in use here)");
}

// A TCP connect from one node to another, each socket made in its node's namespace (setns moves only the calling
// thread, so a thread of its own does it and the lab's threads stay where they are). Milliseconds, or why it failed.
double probe_node_link(const Node& from, const Node& to, std::string* error) {
  double ms = -1;
  std::thread([&] {
    auto enter = [&](const Node& n) {
      int fd = ::open(n.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
      int e = fd < 0 ? errno : ::setns(fd, CLONE_NEWNET) != 0 ? errno : 0;
      if (fd >= 0) ::close(fd);
      if (e) *error = "cannot enter " + n.netns + ": " + std::strerror(e);
      return e == 0;
    };
    int listener = -1, client = -1;
    if (enter(to)) {
      listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      ::inet_pton(AF_INET, to.address.c_str(), &a.sin_addr);
      socklen_t len = sizeof a;
      if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 1) != 0 ||
          ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        *error = std::string("listen in ") + to.netns + ": " + std::strerror(errno);
      } else if (enter(from)) {
        client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        const int64_t t0 = mono_ns();
        int rc = ::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a);
        pollfd p{client, POLLOUT, 0};
        int err = rc == 0 ? 0 : errno == EINPROGRESS ? (::poll(&p, 1, 3000) == 1 ? -1 : ETIMEDOUT) : errno;
        if (err == -1) {
          socklen_t l = sizeof err;
          ::getsockopt(client, SOL_SOCKET, SO_ERROR, &err, &l);
        }
        if (err == 0)
          ms = ns_to_ms(mono_ns() - t0);
        else
          *error = fmt::format("a TCP connect from {} to {}:{}: {}", from.netns, to.address, ntohs(a.sin_port),
                               err == ETIMEDOUT ? "no answer in 3 s" : std::strerror(err));
      }
    }
    if (client >= 0) ::close(client);
    if (listener >= 0) ::close(listener);
  }).join();
  return ms;
}

// What filters bridged traffic here, for a probe that failed.
std::string bridge_filter_hint() {
  std::ifstream f("/proc/sys/net/bridge/bridge-nf-call-iptables");
  std::string v;
  std::getline(f, v);
  if (trim(v) != "1") return "";
  return "; net.bridge.bridge-nf-call-iptables is 1 here, so the firewall's FORWARD rules (Docker's drop them) apply "
         "to traffic across the bridge: allow it, or set that sysctl to 0 for the run";
}

// "1,2,4": --nodes as given.
std::string node_counts(const std::vector<int>& nodes) {
  std::vector<std::string> out;
  for (int n : nodes) out.push_back(std::to_string(n));
  return join(out, ",");
}

}  // namespace

std::string node_hostname(int k) { return "coldstart-node-" + std::to_string(k); }

int node_of_rank(int rank, int nranks, int nodes) {
  if (nodes <= 1 || nranks <= 0) return 0;
  return rank / std::max(1, nranks / nodes);
}

std::string nodes_refusal() {
  if (::geteuid() == 0) return "";
  return "each node is a network namespace with its own hostname, which only root can make (CAP_SYS_ADMIN and "
         "CAP_NET_ADMIN); run bench as root (sudo), or leave --nodes out";
}

void check_nodes_can_start(const BenchSpec& spec, bool bind_given) {
  if (std::none_of(spec.nodes.begin(), spec.nodes.end(), [](int n) { return n > 1; })) return;
  const std::string flag = "--nodes " + node_counts(spec.nodes);
  if (std::string why = nodes_refusal(); !why.empty()) throw InputError(flag + ": " + why);
  if (bind_given)
    throw InputError(flag +
                     " with --bind or --advertise: the coordinator listens on the nodes' bridge, where every rank "
                     "reaches it; leave --bind and --advertise out");
}

void check_nodes_split(const BenchSpec& spec) {
  for (int n : spec.nodes)
    if (spec.nranks() % n != 0)
      throw InputError(fmt::format(
          "--nodes {}: the job's {} ranks ({} GPU(s), {} rank(s) each) do not split evenly over {} nodes; give node "
          "counts that divide {}",
          node_counts(spec.nodes), spec.nranks(), spec.devices.size(), spec.ranks_per_gpu, n, spec.nranks()));
}

void add_node_env(const Node& node, std::vector<std::pair<std::string, std::string>>& set,
                  std::vector<std::string>& unset) {
  set.insert(set.end(), {{"NCCL_SOCKET_IFNAME", node.ifname},
                         {"NCCL_SOCKET_FAMILY", "AF_INET"},
                         {"NCCL_NET", "Socket"},
                         {"GLOO_SOCKET_IFNAME", node.ifname},
                         {"COLDSTART_NODE_ADDR", node.address}});
  unset.push_back("NCCL_HOSTID");
}

int remove_stale_nodes() {
  int removed = 0;
  static const std::regex netns_name(R"(^coldstart-([0-9]{1,9})-[0-9a-f]+-node-[0-9]+$)");
  RunSpec list;
  list.argv = {"ip", "netns", "list"};
  list.timeout_s = 20;
  RunResult r = run_command(list);
  if (!r.ok()) return 0;  // no ip, or no namespaces yet: nothing of ours either
  for (const auto& line : split(r.output, '\n')) {
    std::string name(trim(line.substr(0, line.find(' '))));
    std::smatch m;
    if (!std::regex_match(name, m, netns_name) || node_owner_alive(std::stol(m[1].str()))) continue;
    run_node_cmd_quietly({"ip", "netns", "del", name});
    ++removed;
  }
  static const std::regex link_name(R"(^(csbr|csv)([0-9]{1,9})(-[0-9]+)?$)");
  list.argv = {"ip", "-o", "link", "show"};
  r = run_command(list);
  if (!r.ok()) return removed;
  for (const auto& line : split(r.output, '\n')) {
    // "12: csbr4711: <BROADCAST,..." or "13: csv4711-0@if2: <..."
    auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 2);
    name = name.substr(0, name.find_first_of(":@"));
    std::smatch m;
    if (std::regex_match(name, m, link_name) && !node_owner_alive(std::stol(m[2].str())))
      run_node_cmd_quietly({"ip", "link", "del", name});
  }
  return removed;
}

NodeLab::NodeLab(int count, const Link& link, const std::string& run_id) : link_(link) {
  if (count < 1 || count > kMaxNodes) throw RuntimeError(fmt::format("--nodes {}: give 1 to {}", count, kMaxNodes));
  if (std::string why = nodes_refusal(); !why.empty()) throw InputError("--nodes: " + why);
  remove_stale_nodes();
  const std::string pid = std::to_string(::getpid());
  subnet_ = pick_node_subnet();
  bridge_ = kBridgePrefix + pid;
  lab_address_ = subnet_ + ".1";
  for (int k = 0; k < count; ++k)
    nodes_.push_back({fmt::format("{}{}-{}-node-{}", kNetnsPrefix, pid, run_id, k), "", node_hostname(k), kNodeIfname,
                      fmt::format("{}.{}", subnet_, k + 2)});
  for (auto& n : nodes_) n.netns_path = "/run/netns/" + n.netns;
  try {
    run_node_cmd({"ip", "link", "add", bridge_, "type", "bridge"});
    run_node_cmd({"ip", "addr", "add", lab_address_ + "/24", "dev", bridge_});
    run_node_cmd({"ip", "link", "set", bridge_, "up"});
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const Node& n = nodes_[k];
      const std::string veth = fmt::format("{}{}-{}", kVethPrefix, pid, k);
      run_node_cmd({"ip", "netns", "add", n.netns});
      run_node_cmd({"ip", "link", "add", veth, "type", "veth", "peer", "name", n.ifname, "netns", n.netns});
      veths_.push_back(veth);
      run_node_cmd({"ip", "link", "set", veth, "master", bridge_});
      run_node_cmd({"ip", "link", "set", veth, "up"});
      run_node_cmd({"ip", "-n", n.netns, "addr", "add", n.address + "/24", "dev", n.ifname});
      run_node_cmd({"ip", "-n", n.netns, "link", "set", n.ifname, "up"});
      run_node_cmd({"ip", "-n", n.netns, "link", "set", "lo", "up"});
      if (link_.any()) {
        // netem on the bridge's end: what enters the node waits. A deep queue, so that the delay never drops packets.
        std::vector<std::string> tc{"tc", "qdisc", "add", "dev", veth, "root", "netem", "limit", "1000000"};
        if (link_.latency_s > 0)
          tc.insert(tc.end(), {"delay", fmt::format("{}us", static_cast<int64_t>(link_.latency_s * 1e6 + 0.5))});
        if (link_.rate_bps > 0) tc.insert(tc.end(), {"rate", fmt::format("{}bit", link_.rate_bps)});
        run_node_cmd(tc);
      }
    }
    if (nodes_.size() > 1) {
      std::string error;
      probe_ms_ = probe_node_link(nodes_[0], nodes_[1], &error);
      if (probe_ms_ < 0)
        throw RuntimeError(fmt::format("--nodes: node 0 cannot reach node 1 across bridge {} ({}){}", bridge_, error,
                                       bridge_filter_hint()));
    }
  } catch (...) {
    tear_down();
    throw;
  }
}

NodeLab::~NodeLab() { tear_down(); }

void NodeLab::tear_down() noexcept {
  try {
    // The veths first: a namespace's own go when the kernel frees it, which is after `ip netns del` returns.
    for (const auto& v : veths_) run_node_cmd_quietly({"ip", "link", "del", v});
    for (const auto& n : nodes_) run_node_cmd_quietly({"ip", "netns", "del", n.netns});
    if (!bridge_.empty()) run_node_cmd_quietly({"ip", "link", "del", bridge_});
  } catch (...) {
  }
  nodes_.clear();
  veths_.clear();
  bridge_.clear();
}

std::string NodeLab::describe() const {
  std::string s = fmt::format("{} nodes (network namespaces, hosts {}..{}) on bridge {}, {}.0/24", nodes_.size(),
                              node_hostname(0), static_cast<int>(nodes_.size()) - 1, bridge_, subnet_);
  if (link_.any()) s += ", link " + link_.name() + " (netem)";
  if (nodes_.size() > 1) s += fmt::format(": a TCP connect from node 0 to node 1 took {:.2f} ms", probe_ms_);
  return s;
}

}  // namespace coldstart::lab
