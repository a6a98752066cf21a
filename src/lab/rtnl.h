// The kernel's own interfaces for bench --nodes' network, so that it needs no tool (iproute2 is not on every GPU node):
// rtnetlink requests over util/netlink.h's socket (links, addresses, netem; what `ip` and `tc` send) and network
// namespaces bound to a file under /run/netns (what `ip netns add` and `del` do). Every request asks for the kernel's
// acknowledgement and a failure is an RtnlError naming the operation, the errno and the kernel's own words where it
// gives them (extended ack). Every receive is bounded (5 s), so a kernel that never answers is an error, not a hang.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/netlink.h"

namespace coldstart::lab {

// A request the kernel refused or did not answer. what(): "OPERATION: Operation not permitted (EPERM)[: its words]"
// (model/net.h's errno_text).
struct RtnlError : RuntimeError {
  RtnlError(const std::string& operation, int err, const std::string& kernel_said = "");
  int err;
};

// netem's options, as `tc qdisc add ... netem limit L delay D rate R` gives them.
struct Netem {
  uint32_t limit = 1000;          // packets the queue holds
  uint64_t latency_ns = 0;        // delay
  uint64_t rate_bytes_per_s = 0;  // 0: not limited
};

// What `tc` would write for a delay: ticks of the packet scheduler's clock, from /proc/net/psched's text (its first
// three hex fields: ns per us, ns per tick, clock resolution). The kernel's format when the text is unreadable.
uint32_t psched_ticks(uint64_t ns, const std::string& psched_text);

// The attributes of a netem qdisc's TCA_OPTIONS (struct tc_netem_qopt, then TCA_NETEM_LATENCY64 and the rate): the
// bytes a request carries, for the test to read back.
std::vector<uint8_t> netem_options(const Netem& netem, const std::string& psched_text);

// A NETLINK_ROUTE socket in one network namespace (the calling thread's, or one entered for it) and the requests of
// --nodes. Move-only.
class Rtnl {
 public:
  Rtnl();  // in the calling thread's namespace; RtnlError when no socket can be opened
  // A socket in the namespace `ns_fd` refers to (opened by a thread that entered it: the socket stays there).
  static Rtnl in_netns(int ns_fd, const std::string& ns_name);
  Rtnl(Rtnl&& other) noexcept = default;
  Rtnl& operator=(Rtnl&&) = delete;
  Rtnl(const Rtnl&) = delete;

  // The interface's index, or 0 when there is none of that name.
  int link_index(const std::string& name);
  // Every interface: index and name (an RTM_GETLINK dump).
  std::vector<std::pair<int, std::string>> links();
  // Every IPv4 address here ("10.0.0.2"), and every IPv4 route's destination of every table ("10.213.7.0/24").
  std::vector<std::string> ipv4_addresses();
  std::vector<std::string> ipv4_routes();

  void add_bridge(const std::string& name);
  // A veth pair `name` here and `peer` in the namespace peer_ns_fd refers to.
  void add_veth(const std::string& name, const std::string& peer, int peer_ns_fd);
  void set_master(const std::string& name, int index, int master_index);
  void set_up(const std::string& name, int index);
  void add_ipv4_address(const std::string& name, int index, const std::string& address, int prefix_len);
  // The root qdisc of the interface: netem.
  void add_netem(const std::string& name, int index, const Netem& netem);
  // 0, or the errno (ENODEV when it is already gone): for tearing down, where what is gone is no failure.
  int delete_link(const std::string& name);

 private:
  explicit Rtnl(NetlinkSocket socket) : socket_(std::move(socket)) {}
  // Sends one request (its nlmsghdr's length, type and flags set) and waits for the kernel's acknowledgement (a
  // dump's end); each answer before it goes to on_reply. Throws RtnlError(operation, errno).
  void request(std::vector<uint8_t>& msg, const std::string& operation,
               const std::function<void(const nlmsghdr*)>& on_reply = {});
  NetlinkSocket socket_;
};

// A new network namespace bound to /run/netns/NAME, as `ip netns add NAME` makes it (/run/netns made a shared mount
// first, as ip does, so that an unmount reaches every mount namespace). Returns an fd on it (close-on-exec) and the
// path a process enters it by: /run/netns/NAME, or where the bind mount is not allowed (a container's seccomp or
// read-only /run) /proc/PID/fd/FD of the fd, which lives as long as this process keeps the fd open. RtnlError naming
// the step that failed.
struct Netns {
  int fd = -1;
  std::string path;
  bool bound = false;  // whether path is the bind mount under /run/netns
};
Netns create_netns(const std::string& name);
// `ip netns del NAME`: the bind mount detached and the file removed; false when there was none.
bool remove_netns(const std::string& name);
// The names under /run/netns (`ip netns list`).
std::vector<std::string> list_netns();

// A TUN device `name` (IPv4 packets, no packet information header) made in the namespace ns_fd refers to (-1: the
// calling thread's): the returned fd (non-blocking, close-on-exec) is its other end, and closing it removes the
// device. RtnlError naming the device and the namespace (ENOENT: no /dev/net/tun on this machine).
int open_tun(int ns_fd, const std::string& ns_name, const std::string& name);

}  // namespace coldstart::lab
