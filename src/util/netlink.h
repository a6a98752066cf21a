// One NETLINK_ROUTE socket for every folder that asks the kernel over rtnetlink: doctor net's lookups without root
// (net/netlink.h: a route, the neighbour table) and bench --nodes' links and namespaces (lab/rtnl.h). Every receive is
// bounded by the socket's timeout, so a kernel or sandbox that never answers is an error, not a hang.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

struct nlmsghdr;  // <linux/netlink.h>

namespace coldstart {

// How an exchange ended, from the one success to each way it fails.
enum class NetlinkEnd {
  answered,      // NLMSG_DONE, the kernel's acknowledgement, or on_message had what it wanted
  not_sent,      // sendto failed
  not_received,  // recv failed: ETIMEDOUT when nothing came within the timeout, ECONNRESET when it read 0 bytes
  short_error,   // an NLMSG_ERROR too short to hold its errno (EPROTO)
  refused,       // the kernel answered with an error: its errno, and its words where it gave them
};

struct NetlinkResult {
  NetlinkEnd end = NetlinkEnd::answered;
  int err = 0;              // 0 when answered, else the errno that ended the exchange
  std::string kernel_said;  // refused: the extended ack's message ("" when the kernel gave none)
  bool ok() const { return err == 0; }
};

// A bound NETLINK_ROUTE socket in the network namespace of the thread that opens it (it stays there: open it on a
// thread that entered a namespace to ask that one). Each receive waits at most timeout_s; the kernel's errors come with
// its words (NETLINK_EXT_ACK, 4.12+) and without our request echoed back (NETLINK_CAP_ACK). Move-only; closed when it
// goes.
class NetlinkSocket {
 public:
  explicit NetlinkSocket(int timeout_s);
  ~NetlinkSocket();
  NetlinkSocket(NetlinkSocket&& other) noexcept;
  NetlinkSocket& operator=(NetlinkSocket&& other) noexcept;
  NetlinkSocket(const NetlinkSocket&) = delete;
  NetlinkSocket& operator=(const NetlinkSocket&) = delete;

  // 0, or the errno of socket() or bind(): the socket is then closed and every exchange fails (EBADF).
  int error() const { return error_; }

  // Sends one request (its header's length, type and flags written; the sequence number is set here, this socket's
  // next) and hands each answer to it to on_message until on_message returns false, NLMSG_DONE ends a dump, or an
  // NLMSG_ERROR ends it (error 0: the acknowledgement NLM_F_ACK asks for). Answers to an earlier request (another
  // sequence number: one that gave up early) are skipped; a receive interrupted by a signal is retried.
  NetlinkResult exchange(nlmsghdr* request, const std::function<bool(const nlmsghdr*)>& on_message);

 private:
  int fd_ = -1;
  int error_ = 0;
  uint32_t seq_ = 0;
};

}  // namespace coldstart
