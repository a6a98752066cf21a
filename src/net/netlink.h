// The kernel's own answers, over rtnetlink, without root: the route (and source address) the kernel would pick toward
// an address, and the neighbour (ARP/NDP) entry of a next hop.
#pragma once
#include <string>

namespace coldstart::net {

// A route or policy rule that rejects a destination, found in the kernel's tables (RTM_GETROUTE and RTM_GETRULE dumps):
// what `ip` would print for it and the command that removes it.
struct RejectEntry {
  std::string type;  // "unreachable", "blackhole", "prohibit", "throw"; "" when none was found
  std::string
      text;  // "unreachable 203.0.113.0/24", "blackhole 10.9.0.0/16 table 100", "rule 1000: to 10.0.0.0/8 prohibit"
  std::string remove;  // "ip route del unreachable 203.0.113.0/24", "ip rule del priority 1000"
};

// The kernel answers a lookup with a route (RTM_NEWROUTE), or with an error when the route it finds rejects: no route
// at all -> ENETUNREACH (type ""; IPv6's "unreachable" routes and an `unreachable` rule answer the same), an
// "unreachable" route -> EHOSTUNREACH, "prohibit" -> EACCES, "blackhole" -> EINVAL (type is then set from the error).
// A refused lookup names the route or rule that refused it (`reject`), found in the tables: the most specific route
// of that type holding the address (any table), else the first rule of that action whose destination holds it. A text
// that is not a numeric address -> EINVAL with type "". A socket or a kernel that does not answer -> that errno
// (ETIMEDOUT after 1 s).
struct Route {
  int error = 0;     // errno of the lookup: ENETUNREACH when there is no route
  std::string type;  // "unicast", "local", "unreachable", "blackhole", "prohibit", ...
  std::string dev;   // output interface
  int ifindex = 0;
  std::string gateway;  // "" when the destination is on-link
  std::string src;      // the source address the kernel would use
  RejectEntry reject;   // when the lookup was refused: the entry that refused it, if found
  bool ok() const { return error == 0 && (type == "unicast" || type == "local"); }
};
Route route_to(const std::string& address);  // a numeric IPv4 or IPv6 address

// The entry for `address` on interface `ifindex` (0: any), from an RTM_GETNEIGH dump.
struct Neighbour {
  int error = 0;  // errno when the table could not be read (a sandbox without neighbour support); found is then false
  bool found = false;
  std::string state;      // "REACHABLE", "STALE", "DELAY", "PROBE", "INCOMPLETE", "FAILED", "NOARP", "PERMANENT"
  std::string lladdr;     // "aa:bb:cc:dd:ee:ff", "" when unresolved
  bool resolved() const;  // a link-layer address is known or not needed (found, not INCOMPLETE, FAILED or NONE)
};
Neighbour neighbour(const std::string& address, int ifindex);

}  // namespace coldstart::net
