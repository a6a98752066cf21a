// bench --nodes: the nodes of a job emulated on one machine. Each node is a network namespace (its own interface,
// address and loopback) whose ranks also get a UTS namespace with the node's hostname, so that NCCL, which tells hosts
// apart by hostname and boot id, takes them for separate hosts and connects them through its network transport. The
// namespaces hang off one bridge in the lab's namespace that has an address of its own: the coordinator listens
// there. --link shapes each node's link with netem, on the bridge's side of its veth: a packet into a node is delayed
// once, so one node's packet to another is delayed once and a round trip twice. On a kernel without netem the nodes
// and the lab get TUN devices instead of veths and a bridge, and coldstart's own delay line (lab/delay_line.h) carries
// their packets with the same delays.
//
// Built once per run, as root, through the kernel's own interfaces (rtnetlink and namespace files, lab/rtnl.h: no
// iproute2), and torn down by the destructor; names carry the lab's pid and the run's id, and what a killed run left
// (its process gone) is removed before the next is built.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lab/delay_line.h"
#include "model/spec.h"

namespace coldstart::lab {

class Rtnl;

struct Node {
  std::string netns;       // its name, as `ip netns` lists it: coldstart-<pid>-<run id>-node-<k>
  std::string netns_path;  // /run/netns/<netns> (or /proc/<pid>/fd/<fd> where no bind mount is allowed): what a
                           // rank's spawn enters
  std::string hostname;    // coldstart-node-<k>
  std::string ifname;      // its interface inside the namespace (the veth's end there)
  std::string address;     // its IPv4 address on the bridge
};

class NodeLab {
 public:
  // Builds `count` nodes (at least 1) on a new bridge (or, for a link on a kernel without netem, on the delay line),
  // after removing what killed runs left. Throws RuntimeError naming the operation that failed and its errno, or why
  // (node 0 unable to reach node 1); what was built by then is torn down.
  NodeLab(int count, const Link& link, const std::string& run_id);
  ~NodeLab();
  NodeLab(const NodeLab&) = delete;
  NodeLab& operator=(const NodeLab&) = delete;

  const std::string& bridge() const { return bridge_; }  // the bridge, or the lab's TUN on the delay line
  bool on_delay_line() const { return line_ != nullptr; }
  const std::string& lab_address() const { return lab_address_; }  // the bridge's address, in the lab's namespace
  const std::vector<Node>& nodes() const { return nodes_; }
  // A TCP connect from node 0 to node 1 when built (the round trip across the link, two of --link's delays), in ms;
  // 0 with one node.
  double probe_ms() const { return probe_ms_; }
  // "2 nodes (network namespaces coldstart-node-0..1) on bridge csbr4711, 10.213.7.0/24, link 2ms: a TCP connect
  // between two nodes took 4.2 ms"
  std::string describe() const;

 private:
  struct NoNetem {};  // the kernel refused netem's qdisc: build again on the delay line
  void build(int count, const std::string& run_id, bool delay_line);
  void add_bridge_port(Rtnl& rtnl, int ns_fd, const Node& n, const std::string& veth, int bridge_index);
  void tear_down() noexcept;

  std::string bridge_, lab_address_, subnet_;
  std::vector<std::string> veths_;  // the bridge's ends of the nodes' veths
  std::vector<int> ns_fds_;         // the nodes' namespaces, held open while the lab runs
  Link link_;
  std::vector<Node> nodes_;
  double probe_ms_ = 0;
  std::unique_ptr<DelayLine> line_;  // with a link on a kernel without netem
  std::vector<int> tun_fds_;         // the delay line's ports: the lab's TUN, then each node's
};

// The interface each node's ranks are told to use (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME): its veth's end.
inline constexpr const char* kNodeIfname = "csnet0";

// "coldstart-node-<k>"
std::string node_hostname(int k);
// The node rank `rank` of a job of `nranks` ranks split evenly over `nodes` nodes runs on: ranks in order, nranks /
// nodes to a node (the ranks of one GPU stay together when nodes divides the GPUs).
int node_of_rank(int rank, int nranks, int nodes);
// The most ranks of `spec`'s job one GPU of one node holds when the job is split over `nodes` nodes: what an NCCL
// before 2.30 refuses above 1 ("Duplicate GPU detected"), ranks of other nodes being other hosts to it.
int ranks_sharing_a_gpu(const BenchSpec& spec, int nodes);
// Removes the namespaces and bridges of runs whose process is gone; how many namespaces it removed.
int remove_stale_nodes();
// Why this process cannot build nodes ("" when it can): root is needed for network namespaces.
std::string nodes_refusal();
// A run over nodes (a count above one in spec.nodes), before anything starts: InputError without root (naming
// --nodes and why), or where the coordinator is asked to listen elsewhere than on the bridge (`bind_given`: --bind or
// --advertise).
void check_nodes_can_start(const BenchSpec& spec, bool bind_given);
// Each node count divides the job's ranks; else InputError naming --nodes, the ranks and what to give.
void check_nodes_split(const BenchSpec& spec);
// A rank of `node`'s environment: NCCL's bootstrap and socket transport and Gloo on the node's interface (IPv4, the
// socket transport), its address for the torch probe (COLDSTART_NODE_ADDR), and no NCCL_HOSTID, which would make
// every node one host again.
void add_node_env(const Node& node, std::vector<std::pair<std::string, std::string>>& set,
                  std::vector<std::string>& unset);

}  // namespace coldstart::lab
