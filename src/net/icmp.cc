// The socket error queue (IP_RECVERR, IPV6_RECVERR; ip(7), ipv6(7)) and ICMP's numbers (RFC 792, RFC 1812 for the
// administratively prohibited codes, RFC 4443 for ICMPv6) in words.
#include "net/icmp.h"

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace coldstart::net {
namespace {

constexpr int kIcmpUnreach = 3, kIcmpTimeExceeded = 11;             // ICMP types
constexpr int kIcmp6Unreach = 1, kIcmp6TooBig = 2, kIcmp6Time = 3;  // ICMPv6 types

const char* unreach_v4(int code) {
  static const char* names[] = {"network unreachable",
                                "host unreachable",
                                "protocol unreachable",
                                "port unreachable",
                                "fragmentation needed",
                                "source route failed",
                                "destination network unknown",
                                "destination host unknown",
                                "source host isolated",
                                "network administratively prohibited",
                                "host administratively prohibited",
                                "network unreachable for type of service",
                                "host unreachable for type of service",
                                "communication administratively prohibited",
                                "host precedence violation",
                                "precedence cutoff in effect"};
  return code >= 0 && code < 16 ? names[code] : "unknown code";
}

const char* unreach_v6(int code) {
  static const char* names[] = {"no route to destination",
                                "communication administratively prohibited",
                                "beyond scope of source address",
                                "address unreachable",
                                "port unreachable",
                                "source address failed ingress/egress policy",
                                "reject route to destination"};
  return code >= 0 && code < 7 ? names[code] : "unknown code";
}

IcmpKind kind_v4(int type, int code) {
  if (type == kIcmpTimeExceeded) return IcmpKind::ttl_exceeded;
  if (type != kIcmpUnreach) return IcmpKind::other;
  switch (code) {
    case 0:
    case 6:
    case 11: return IcmpKind::no_route;
    case 1:
    case 7:
    case 8:
    case 12: return IcmpKind::host_unreachable;
    case 2:
    case 3: return IcmpKind::port_unreachable;
    case 4: return IcmpKind::too_big;
    case 9:
    case 10:
    case 13:
    case 14:
    case 15: return IcmpKind::prohibited;
  }
  return IcmpKind::other;
}

IcmpKind kind_v6(int type, int code) {
  if (type == kIcmp6Time) return IcmpKind::ttl_exceeded;
  if (type == kIcmp6TooBig) return IcmpKind::too_big;
  if (type != kIcmp6Unreach) return IcmpKind::other;
  switch (code) {
    case 0:
    case 2: return IcmpKind::no_route;
    case 3: return IcmpKind::host_unreachable;
    case 4: return IcmpKind::port_unreachable;
    case 1:
    case 5:
    case 6: return IcmpKind::prohibited;
  }
  return IcmpKind::other;
}

}  // namespace

IcmpKind IcmpReport::kind() const {
  if (!present || local) return IcmpKind::none;
  return v6 ? kind_v6(type, code) : kind_v4(type, code);
}

std::string IcmpReport::describe() const {
  if (!present) return "no ICMP error came back";
  if (local) return "this host's own stack reported " + std::string(std::strerror(err));
  std::string what;
  if (!v6 && type == kIcmpUnreach)
    what = "ICMP destination unreachable, code " + std::to_string(code) + " (" + unreach_v4(code) + ")";
  else if (v6 && type == kIcmp6Unreach)
    what = "ICMPv6 destination unreachable, code " + std::to_string(code) + " (" + unreach_v6(code) + ")";
  else if ((!v6 && type == kIcmpTimeExceeded) || (v6 && type == kIcmp6Time))
    what = std::string(v6 ? "ICMPv6" : "ICMP") + " time exceeded (the packet's hop limit ran out on the way)";
  else if (v6 && type == kIcmp6TooBig)
    what = "ICMPv6 packet too big";
  else
    what = std::string(v6 ? "ICMPv6" : "ICMP") + " type " + std::to_string(type) + ", code " + std::to_string(code);
  return what + (from.empty() ? "" : " from " + from);
}

void set_recverr(int fd, int family, bool on) {
  const int v = on ? 1 : 0;
  if (family == AF_INET6)
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &v, sizeof v);
  else
    ::setsockopt(fd, IPPROTO_IP, IP_RECVERR, &v, sizeof v);
}

IcmpReport read_error_queue(int fd) {
  IcmpReport r;
  char data[64];
  alignas(cmsghdr) char control[512];
  iovec iov{data, sizeof data};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (::recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return r;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    const bool v4 = c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR;
    const bool v6 = c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR;
    if ((!v4 && !v6) || c->cmsg_len < CMSG_LEN(sizeof(sock_extended_err))) continue;
    sock_extended_err ee;
    std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
    r.present = true;
    r.err = static_cast<int>(ee.ee_errno);
    r.local = ee.ee_origin == SO_EE_ORIGIN_LOCAL;
    r.v6 = ee.ee_origin == SO_EE_ORIGIN_ICMP6;
    r.type = ee.ee_type;
    r.code = ee.ee_code;
    // The offender's address follows the structure (SO_EE_OFFENDER), when the cmsg holds it.
    const size_t after = sizeof(sock_extended_err);
    if (c->cmsg_len >= CMSG_LEN(after + sizeof(sockaddr_in))) {
      sockaddr_storage off{};
      std::memcpy(&off, CMSG_DATA(c) + after, std::min(sizeof off, static_cast<size_t>(c->cmsg_len - CMSG_LEN(after))));
      char text[INET6_ADDRSTRLEN] = {};
      if (off.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(off).sin_addr, text, sizeof text);
      else if (off.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(off).sin6_addr, text, sizeof text);
      r.from = text;
    }
    break;
  }
  return r;
}

}  // namespace coldstart::net
