// Who answered a connection that failed, and how: the ICMP error (or this host's own error) a socket's error queue
// holds (IP_RECVERR, IPV6_RECVERR), read after connect() failed. connect() says only EHOSTUNREACH for a router's "host
// unreachable", a firewall's "administratively prohibited" and a routing loop's "time exceeded" alike; the queue says
// which of them, and the address that sent it.
#pragma once
#include <string>

namespace coldstart::net {

// What an ICMP error says about the path, whatever its family's numbers.
enum class IcmpKind {
  none,              // nothing on the error queue
  no_route,          // network unreachable, or an ICMPv6 "no route" / "beyond scope"
  host_unreachable,  // host unreachable, address unreachable: the sender cannot deliver to the host
  prohibited,        // administratively prohibited (a firewall's reject, a `prohibit` route), a reject route (ICMPv6)
  port_unreachable,  // port or protocol unreachable: for TCP, a firewall's reject (a closed port answers a reset)
  ttl_exceeded,      // time exceeded in transit: the packets loop between routers
  too_big,           // fragmentation needed / packet too big
  other,
};

struct IcmpReport {
  bool present = false;
  bool local = false;  // SO_EE_ORIGIN_LOCAL: this host's own stack said it, not a packet from the network
  bool v6 = false;     // ICMPv6's numbers
  int type = 0, code = 0;
  int err = 0;       // the errno it stands for
  std::string from;  // the address that sent it (the offender); "" when not given
  IcmpKind kind() const;
  // "ICMP destination unreachable, code 13 (communication administratively prohibited) from 10.2.0.10"
  std::string describe() const;
};

// The oldest error on `fd`'s error queue (non-blocking; none: present is false). The socket must have had
// IP_RECVERR / IPV6_RECVERR set before the error came.
IcmpReport read_error_queue(int fd);

// Sets IP_RECVERR (or IPV6_RECVERR, by `family`) on `fd` to `on`.
void set_recverr(int fd, int family, bool on);

}  // namespace coldstart::net
