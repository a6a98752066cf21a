#include "util/netlink.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace coldstart {
// Named, so that a unity build's other files (their own helpers in anonymous namespaces) cannot clash with these.
namespace netlink_socket_impl {
namespace {

// The extended ack's message: its attributes follow the error and what it echoed of the request (only its header
// when capped).
std::string kernel_words(const nlmsghdr* h, const nlmsgerr* e) {
  if (!(h->nlmsg_flags & NLM_F_ACK_TLVS) || e->msg.nlmsg_len < sizeof(nlmsghdr)) return "";
  size_t skip = sizeof(nlmsgerr);
  if (!(h->nlmsg_flags & NLM_F_CAPPED)) skip += e->msg.nlmsg_len - sizeof(nlmsghdr);
  if (h->nlmsg_len < NLMSG_LENGTH(NLMSG_ALIGN(skip))) return "";
  auto* a = reinterpret_cast<const rtattr*>(static_cast<const char*>(NLMSG_DATA(h)) + NLMSG_ALIGN(skip));
  int len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(skip)));
  for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if ((a->rta_type & NLA_TYPE_MASK) != NLMSGERR_ATTR_MSG || RTA_PAYLOAD(a) == 0) continue;
    const auto* text = static_cast<const char*>(RTA_DATA(a));
    return std::string(text, strnlen(text, RTA_PAYLOAD(a)));
  }
  return "";
}

}  // namespace
}  // namespace netlink_socket_impl

NetlinkSocket::NetlinkSocket(int timeout_s) {
  fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd_ < 0) {
    error_ = errno;
    return;
  }
  timeval tv{timeout_s, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd_, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  ::setsockopt(fd_, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    error_ = errno;
    ::close(fd_);
    fd_ = -1;
  }
}

NetlinkSocket::~NetlinkSocket() {
  if (fd_ >= 0) ::close(fd_);
}

NetlinkSocket::NetlinkSocket(NetlinkSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), error_(other.error_), seq_(other.seq_) {}

NetlinkSocket& NetlinkSocket::operator=(NetlinkSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    error_ = other.error_;
    seq_ = other.seq_;
  }
  return *this;
}

NetlinkResult NetlinkSocket::exchange(nlmsghdr* request, const std::function<bool(const nlmsghdr*)>& on_message) {
  const uint32_t seq = ++seq_;
  request->nlmsg_seq = seq;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_, request, request->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    return {NetlinkEnd::not_sent, errno, ""};
  alignas(nlmsghdr) static thread_local char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {NetlinkEnd::not_received, errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno, ""};
    }
    if (n == 0) return {NetlinkEnd::not_received, ECONNRESET, ""};
    size_t left = static_cast<size_t>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq) continue;  // an answer to an earlier request that gave up
      if (h->nlmsg_type == NLMSG_DONE) return {};
      if (h->nlmsg_type == NLMSG_ERROR) {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return {NetlinkEnd::short_error, EPROTO, ""};
        const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        if (e->error == 0) return {};  // the acknowledgement
        return {NetlinkEnd::refused, -e->error, netlink_socket_impl::kernel_words(h, e)};
      }
      if (!on_message(h)) return {};
    }
  }
}

}  // namespace coldstart
