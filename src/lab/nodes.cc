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
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "lab/delay_line.h"
#include "lab/rtnl.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {

constexpr const char* kNetnsPrefix = "coldstart-";
constexpr const char* kBridgePrefix = "csbr";  // interface names are at most 15 characters: csbr<pid>
constexpr const char* kVethPrefix = "csv";     // the bridge's end of node k's veth: csv<pid>-<k>

// A failed request of the network's build, for the user: "--nodes: OPERATION: ERROR (ERRNO)[: the kernel's words]"
// and what to do where the cause is known.
[[noreturn]] void throw_node_error(const RtnlError& e) {
  std::string hint;
  if (e.err == EPERM || e.err == EACCES)
    hint = "; network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  else if (e.err == EOPNOTSUPP && std::string(e.what()).find("(RTM_NEWLINK)") != std::string::npos)
    hint = "; the kernel has no driver for this kind of link (the bridge and veth modules, loaded on the host)";
  throw RuntimeError(fmt::format("--nodes: {}{}", e.what(), hint));
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

// Whether 10.213.x.0/24 is in use here: an address in it, or a route into it (or one covering it from /16 down).
bool node_subnet_taken(int x, const std::vector<std::string>& addrs, const std::vector<std::string>& routes) {
  const std::string net = fmt::format("10.213.{}.", x);
  for (const auto& a : addrs)
    if (a.starts_with(net)) return true;
  for (const auto& r : routes) {
    const auto slash = r.find('/');
    const int len = std::atoi(r.c_str() + slash + 1);
    if (r.starts_with(net) || (len >= 16 && len < 24 && r.starts_with("10.213."))) return true;
  }
  return false;
}

// A free /24 for the bridge: 10.213.X.0/24 with X from the pid, skipping what this host already has.
std::string pick_node_subnet(Rtnl& rtnl) {
  const auto addrs = rtnl.ipv4_addresses();
  const auto routes = rtnl.ipv4_routes();
  for (int i = 0; i < 256; ++i) {
    const int x = static_cast<int>((::getpid() + i) % 256);
    if (!node_subnet_taken(x, addrs, routes)) return fmt::format("10.213.{}", x);
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

int ranks_sharing_a_gpu(const BenchSpec& spec, int nodes) {
  std::map<std::pair<int, int>, int> held;  // (node, GPU) -> ranks
  int most = 0;
  for (int r = 0; r < spec.nranks(); ++r)
    most = std::max(most, ++held[{node_of_rank(r, spec.nranks(), nodes), r / std::max(1, spec.ranks_per_gpu)}]);
  return most;
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
  for (const auto& name : list_netns()) {  // none, or no /run/netns yet: nothing of ours either
    std::smatch m;
    if (!std::regex_match(name, m, netns_name) || node_owner_alive(std::stol(m[1].str()))) continue;
    remove_netns(name);
    ++removed;
  }
  static const std::regex link_name(R"(^(csbr|csv)([0-9]{1,9})(-[0-9]+)?$)");
  try {
    Rtnl rtnl;
    for (const auto& [index, name] : rtnl.links()) {
      std::smatch m;
      if (std::regex_match(name, m, link_name) && !node_owner_alive(std::stol(m[2].str()))) rtnl.delete_link(name);
    }
  } catch (const RtnlError&) {
    // No rtnetlink here (a sandbox): the build that follows says so.
  }
  return removed;
}

NodeLab::NodeLab(int count, const Link& link, const std::string& run_id) : link_(link) {
  if (count < 1 || count > kMaxNodes) throw RuntimeError(fmt::format("--nodes {}: give 1 to {}", count, kMaxNodes));
  if (std::string why = nodes_refusal(); !why.empty()) throw InputError("--nodes: " + why);
  remove_stale_nodes();
  try {
    try {
      build(count, run_id, /*delay_line=*/false);
    } catch (const NoNetem&) {
      tear_down();  // the kernel has no netem: the same nodes on coldstart's own delay line
      build(count, run_id, /*delay_line=*/true);
    }
    if (nodes_.size() > 1) {
      std::string error;
      probe_ms_ = probe_node_link(nodes_[0], nodes_[1], &error);
      if (probe_ms_ < 0)
        throw RuntimeError(fmt::format("--nodes: node 0 cannot reach node 1 across {} ({}){}", bridge_, error,
                                       line_ ? "" : bridge_filter_hint()));
    }
  } catch (const RtnlError& e) {
    tear_down();
    throw_node_error(e);
  } catch (...) {
    tear_down();
    throw;
  }
}

void NodeLab::build(int count, const std::string& run_id, bool delay_line) {
  const std::string pid = std::to_string(::getpid());
  Rtnl rtnl;
  subnet_ = pick_node_subnet(rtnl);
  bridge_ = kBridgePrefix + pid;
  lab_address_ = subnet_ + ".1";
  for (int k = 0; k < count; ++k)
    nodes_.push_back({fmt::format("{}{}-{}-node-{}", kNetnsPrefix, pid, run_id, k), "", node_hostname(k), kNodeIfname,
                      fmt::format("{}.{}", subnet_, k + 2)});
  if (delay_line) {
    // The lab's end: a TUN with the lab's address, where the bridge would be
    line_ = std::make_unique<DelayLine>(static_cast<uint64_t>(link_.latency_s * 1e6 + 0.5) * 1000, link_.rate_bps);
    tun_fds_.push_back(open_tun(-1, "the lab's namespace", bridge_));
    line_->add_port(tun_fds_.back(), lab_address_);
  } else {
    rtnl.add_bridge(bridge_);
  }
  const int bridge_index = rtnl.link_index(bridge_);
  rtnl.add_ipv4_address(bridge_, bridge_index, lab_address_, 24);
  rtnl.set_up(bridge_, bridge_index);
  for (size_t k = 0; k < nodes_.size(); ++k) {
    Node& n = nodes_[k];
    Netns ns = create_netns(n.netns);
    ns_fds_.push_back(ns.fd);
    n.netns_path = ns.path;
    if (delay_line) {
      tun_fds_.push_back(open_tun(ns.fd, n.netns, n.ifname));
      line_->add_port(tun_fds_.back(), n.address);
    } else {
      add_bridge_port(rtnl, ns.fd, n, fmt::format("{}{}-{}", kVethPrefix, pid, k), bridge_index);
    }
    Rtnl in_node = Rtnl::in_netns(ns.fd, n.netns);
    const int if_index = in_node.link_index(n.ifname);
    in_node.add_ipv4_address(n.ifname, if_index, n.address, 24);
    in_node.set_up(n.ifname, if_index);
    in_node.set_up("lo", in_node.link_index("lo"));
  }
  if (line_) line_->start();
}

// Node n's veth: its end `veth` on the bridge, the other (n.ifname) in the node's namespace; with a link, netem on
// the bridge's end (what enters the node waits). NoNetem where the kernel has no netem.
void NodeLab::add_bridge_port(Rtnl& rtnl, int ns_fd, const Node& n, const std::string& veth, int bridge_index) {
  rtnl.add_veth(veth, n.ifname, ns_fd);
  veths_.push_back(veth);
  const int veth_index = rtnl.link_index(veth);
  rtnl.set_master(veth, veth_index, bridge_index);
  rtnl.set_up(veth, veth_index);
  if (!link_.any()) return;
  Netem netem;
  netem.limit = 1'000'000;  // a deep queue, so that the delay never drops packets
  netem.latency_ns = static_cast<uint64_t>(link_.latency_s * 1e6 + 0.5) * 1000;
  netem.rate_bytes_per_s = link_.rate_bps / 8;
  try {
    rtnl.add_netem(veth, veth_index, netem);
  } catch (const RtnlError& e) {
    if (e.err == ENOENT || e.err == EOPNOTSUPP) throw NoNetem{};
    throw;
  }
}

NodeLab::~NodeLab() { tear_down(); }

void NodeLab::tear_down() noexcept {
  if (line_) line_->stop();
  line_.reset();
  for (int fd : tun_fds_) ::close(fd);  // each TUN device goes with its fd
  tun_fds_.clear();
  try {
    // The veths first (each takes its peer in the node with it): a namespace's own go only when the kernel frees the
    // namespace, which is after its file is unmounted and its last fd closed.
    Rtnl rtnl;
    for (const auto& v : veths_) rtnl.delete_link(v);
    if (!bridge_.empty()) rtnl.delete_link(bridge_);
  } catch (...) {
  }
  for (int fd : ns_fds_) ::close(fd);
  for (const auto& n : nodes_)
    if (n.netns_path.starts_with("/run/netns/")) remove_netns(n.netns);
  ns_fds_.clear();
  nodes_.clear();
  veths_.clear();
  bridge_.clear();
}

std::string NodeLab::describe() const {
  std::string s =
      fmt::format("{} nodes (network namespaces, hosts {}..{}) on {} {}, {}.0/24", nodes_.size(), node_hostname(0),
                  static_cast<int>(nodes_.size()) - 1, line_ ? "TUN devices from" : "bridge", bridge_, subnet_);
  if (link_.any())
    s += ", link " + link_.name() + (line_ ? " (coldstart's delay line: the kernel has no netem)" : " (netem)");
  if (nodes_.size() > 1) s += fmt::format(": a TCP connect from node 0 to node 1 took {:.2f} ms", probe_ms_);
  return s;
}

}  // namespace coldstart::lab
