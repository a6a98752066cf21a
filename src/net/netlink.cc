// rtnetlink without root: RTM_GETROUTE for one destination (what `ip route get` asks) and an RTM_GETNEIGH dump (what
// `ip neigh` reads), over util's NETLINK_ROUTE socket. Every receive is bounded (1 s), so a kernel or sandbox that
// never answers costs a second, not a hang.
#include "net/netlink.h"

#include <arpa/inet.h>
#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include "util/netlink.h"

namespace coldstart::net {
// Named, so that a unity build's other files (their own helpers in anonymous namespaces) cannot clash with these.
namespace netlink_impl {
namespace {

struct Address {
  int family = AF_UNSPEC;
  unsigned char bytes[16] = {};
  size_t size() const { return family == AF_INET ? 4 : 16; }
};

bool parse_address(const std::string& text, Address& a) {
  if (::inet_pton(AF_INET, text.c_str(), a.bytes) == 1) {
    a.family = AF_INET;
    return true;
  }
  if (::inet_pton(AF_INET6, text.c_str(), a.bytes) == 1) {
    a.family = AF_INET6;
    return true;
  }
  return false;
}

std::string address_text(int family, const void* data, size_t len) {
  if ((family == AF_INET && len < 4) || (family == AF_INET6 && len < 16) || (family != AF_INET && family != AF_INET6))
    return "";
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(family, data, text, sizeof text);
  return text;
}

constexpr int kTimeoutS = 1;  // each receive's bound

std::string route_type_name(unsigned t) {
  switch (t) {
    case RTN_UNSPEC: return "unspec";
    case RTN_UNICAST: return "unicast";
    case RTN_LOCAL: return "local";
    case RTN_BROADCAST: return "broadcast";
    case RTN_ANYCAST: return "anycast";
    case RTN_MULTICAST: return "multicast";
    case RTN_BLACKHOLE: return "blackhole";
    case RTN_UNREACHABLE: return "unreachable";
    case RTN_PROHIBIT: return "prohibit";
    case RTN_THROW: return "throw";
    case RTN_NAT: return "nat";
    case RTN_XRESOLVE: return "xresolve";
  }
  return "type " + std::to_string(t);
}

std::string nud_name(unsigned state) {
  if (state & NUD_PERMANENT) return "PERMANENT";
  if (state & NUD_NOARP) return "NOARP";
  if (state & NUD_REACHABLE) return "REACHABLE";
  if (state & NUD_STALE) return "STALE";
  if (state & NUD_DELAY) return "DELAY";
  if (state & NUD_PROBE) return "PROBE";
  if (state & NUD_INCOMPLETE) return "INCOMPLETE";
  if (state & NUD_FAILED) return "FAILED";
  return "NONE";
}

std::string lladdr_text(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ':';
    out += digits[p[i] >> 4];
    out += digits[p[i] & 0xf];
  }
  return out;
}

// Whether `prefix`/`len` (bytes of the address's family) holds `a`.
bool holds(const unsigned char* prefix, unsigned len, const Address& a) {
  const unsigned full = len / 8, rest = len % 8;
  if (len > a.size() * 8 || std::memcmp(prefix, a.bytes, full) != 0) return false;
  if (rest == 0) return true;
  const unsigned char mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (prefix[full] & mask) == (a.bytes[full] & mask);
}

std::string prefix_text(int family, const unsigned char* bytes, unsigned len) {
  if (len == 0) return "default";
  const std::string text = address_text(family, bytes, family == AF_INET ? 4 : 16);
  return len == (family == AF_INET ? 32u : 128u) ? text : text + "/" + std::to_string(len);
}

std::string table_text(uint32_t table) {
  return table == RT_TABLE_MAIN ? "" : table == RT_TABLE_LOCAL ? " table local" : " table " + std::to_string(table);
}

// Sends a dump request of `type` for `family` with a zeroed header of `header_size` bytes, handing each answer of
// `answer_type` to on_entry. Returns 0 or the errno that ended it.
int dump(NetlinkSocket& s, uint16_t type, uint16_t answer_type, int family, size_t header_size,
         const std::function<void(const nlmsghdr*)>& on_entry) {
  alignas(nlmsghdr) char req[NLMSG_SPACE(sizeof(rtmsg)) + NLMSG_SPACE(sizeof(fib_rule_hdr))] = {};
  auto* h = reinterpret_cast<nlmsghdr*>(req);
  h->nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(header_size));
  h->nlmsg_type = type;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  *static_cast<unsigned char*>(NLMSG_DATA(h)) = static_cast<unsigned char>(family);  // rtm_family, family: first byte
  const NetlinkResult r = s.exchange(h, [&](const nlmsghdr* m) {
    if (m->nlmsg_type == answer_type && m->nlmsg_len >= NLMSG_LENGTH(header_size)) on_entry(m);
    return true;
  });
  return r.err;
}

// The most specific route of `type` in any table that holds `dst`.
RejectEntry reject_route(NetlinkSocket& s, const Address& dst, unsigned type) {
  RejectEntry best;
  int best_len = -1;
  const std::string ip = dst.family == AF_INET6 ? "ip -6 route" : "ip route";
  dump(s, RTM_GETROUTE, RTM_NEWROUTE, dst.family, sizeof(rtmsg), [&](const nlmsghdr* m) {
    const auto* rt = static_cast<const rtmsg*>(NLMSG_DATA(m));
    if (rt->rtm_family != dst.family || rt->rtm_type != type || static_cast<int>(rt->rtm_dst_len) <= best_len) return;
    unsigned char prefix[16] = {};
    uint32_t table = rt->rtm_table, metric = 0;
    int len = static_cast<int>(RTM_PAYLOAD(m));
    for (const rtattr* a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
      const size_t n = RTA_PAYLOAD(a);
      if (a->rta_type == RTA_DST && n == dst.size()) std::memcpy(prefix, RTA_DATA(a), n);
      if (a->rta_type == RTA_TABLE && n >= 4) std::memcpy(&table, RTA_DATA(a), 4);
      if (a->rta_type == RTA_PRIORITY && n >= 4) std::memcpy(&metric, RTA_DATA(a), 4);
    }
    if (!holds(prefix, rt->rtm_dst_len, dst)) return;
    best_len = rt->rtm_dst_len;
    const std::string what = route_type_name(type) + " " + prefix_text(dst.family, prefix, rt->rtm_dst_len) +
                             table_text(table) + (metric ? " metric " + std::to_string(metric) : "");
    best = RejectEntry{route_type_name(type), what, ip + " del " + what};
  });
  return best;
}

// The first rule (by priority) whose action is `action` and whose destination holds `dst`.
RejectEntry reject_rule(NetlinkSocket& s, const Address& dst, unsigned action, const std::string& type) {
  RejectEntry first;
  uint32_t first_priority = UINT32_MAX;
  const std::string ip = dst.family == AF_INET6 ? "ip -6 rule" : "ip rule";
  dump(s, RTM_GETRULE, RTM_NEWRULE, dst.family, sizeof(fib_rule_hdr), [&](const nlmsghdr* m) {
    const auto* rule = static_cast<const fib_rule_hdr*>(NLMSG_DATA(m));
    if (rule->family != dst.family || rule->action != action) return;
    unsigned char prefix[16] = {};
    uint32_t priority = 0;
    std::string from;
    int len = static_cast<int>(m->nlmsg_len - NLMSG_LENGTH(sizeof(fib_rule_hdr)));
    for (auto* a =
             reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(rule) + NLMSG_ALIGN(sizeof(fib_rule_hdr)));
         RTA_OK(a, len); a = RTA_NEXT(a, len)) {
      const size_t n = RTA_PAYLOAD(a);
      if (a->rta_type == FRA_DST && n == dst.size()) std::memcpy(prefix, RTA_DATA(a), n);
      if (a->rta_type == FRA_SRC && n == dst.size())
        from = " from " + prefix_text(dst.family, static_cast<const unsigned char*>(RTA_DATA(a)), rule->src_len);
      if (a->rta_type == FRA_PRIORITY && n >= 4) std::memcpy(&priority, RTA_DATA(a), 4);
    }
    if (!holds(prefix, rule->dst_len, dst) || priority >= first_priority) return;
    first_priority = priority;
    const std::string to = rule->dst_len ? " to " + prefix_text(dst.family, prefix, rule->dst_len) : "";
    first = RejectEntry{
        type, "rule " + std::to_string(priority) + ":" + (from.empty() ? " from all" : from) + to + " " + type,
        ip + " del priority " + std::to_string(priority)};
  });
  return first;
}

// What refused a lookup that answered `err`: a route of the type that errno stands for, else a rule of that action.
RejectEntry find_reject(const Address& dst, int err) {
  NetlinkSocket s(kTimeoutS);
  if (s.error()) return {};
  RejectEntry e;
  switch (err) {
    case EHOSTUNREACH: e = reject_route(s, dst, RTN_UNREACHABLE); break;
    case EACCES: e = reject_route(s, dst, RTN_PROHIBIT); break;
    case EINVAL: e = reject_route(s, dst, RTN_BLACKHOLE); break;
    case ENETUNREACH:  // IPv6's unreachable routes, a throw route, or an `unreachable` rule
      e = reject_route(s, dst, dst.family == AF_INET6 ? RTN_UNREACHABLE : RTN_THROW);
      break;
    default: return {};
  }
  if (!e.type.empty()) return e;
  switch (err) {
    case EACCES: return reject_rule(s, dst, FR_ACT_PROHIBIT, "prohibit");
    case EINVAL: return reject_rule(s, dst, FR_ACT_BLACKHOLE, "blackhole");
    case ENETUNREACH: return reject_rule(s, dst, FR_ACT_UNREACHABLE, "unreachable");
    default: return {};
  }
}

}  // namespace

Route route(const std::string& address) {
  Route r;
  Address dst;
  if (!parse_address(address, dst)) {
    r.error = EINVAL;
    return r;
  }
  NetlinkSocket s(kTimeoutS);
  if (s.error()) {
    r.error = s.error();
    return r;
  }
  alignas(nlmsghdr) char req[NLMSG_SPACE(sizeof(rtmsg)) + RTA_SPACE(16)] = {};
  auto* h = reinterpret_cast<nlmsghdr*>(req);
  h->nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  h->nlmsg_type = RTM_GETROUTE;
  h->nlmsg_flags = NLM_F_REQUEST;
  auto* rt = static_cast<rtmsg*>(NLMSG_DATA(h));
  rt->rtm_family = static_cast<unsigned char>(dst.family);
  rt->rtm_dst_len = static_cast<unsigned char>(dst.size() * 8);
  auto* attr = reinterpret_cast<rtattr*>(req + NLMSG_ALIGN(h->nlmsg_len));
  attr->rta_type = RTA_DST;
  attr->rta_len = static_cast<unsigned short>(RTA_LENGTH(dst.size()));
  std::memcpy(RTA_DATA(attr), dst.bytes, dst.size());
  h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(attr->rta_len);

  bool answered = false;
  int err = s.exchange(h, [&](const nlmsghdr* m) {
               if (m->nlmsg_type != RTM_NEWROUTE || m->nlmsg_len < NLMSG_LENGTH(sizeof(rtmsg))) return true;
               const auto* got = static_cast<const rtmsg*>(NLMSG_DATA(m));
               answered = true;
               r.type = route_type_name(got->rtm_type);
               int len = static_cast<int>(RTM_PAYLOAD(m));
               for (const rtattr* a = RTM_RTA(got); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
                 size_t n = RTA_PAYLOAD(a);
                 switch (a->rta_type) {
                   case RTA_OIF:
                     if (n >= sizeof(int)) std::memcpy(&r.ifindex, RTA_DATA(a), sizeof(int));
                     break;
                   case RTA_GATEWAY: r.gateway = address_text(got->rtm_family, RTA_DATA(a), n); break;
                   case RTA_PREFSRC: r.src = address_text(got->rtm_family, RTA_DATA(a), n); break;
                   case RTA_VIA:  // an IPv4 route through an IPv6 next hop
                     if (n >= sizeof(rtvia)) {
                       const auto* via = static_cast<const rtvia*>(RTA_DATA(a));
                       r.gateway = address_text(via->rtvia_family, via->rtvia_addr, n - sizeof(rtvia));
                     }
                     break;
                 }
               }
               return false;
             }).err;
  if (err == 0 && !answered) err = EPROTO;
  r.error = err;
  if (err) {
    switch (err) {
      case EHOSTUNREACH: r.type = "unreachable"; break;
      case EACCES: r.type = "prohibit"; break;
      case EINVAL: r.type = "blackhole"; break;
      default: r.type.clear();
    }
    r.reject = find_reject(dst, err);
    if (!r.reject.type.empty()) r.type = r.reject.type;  // an `unreachable` rule answers ENETUNREACH
    return r;
  }
  if (r.ifindex > 0) {
    char name[IF_NAMESIZE] = {};
    if (::if_indextoname(static_cast<unsigned>(r.ifindex), name)) r.dev = name;
  }
  return r;
}

Neighbour neigh(const std::string& address, int ifindex) {
  Neighbour out;
  Address want;
  if (!parse_address(address, want)) {
    out.error = EINVAL;
    return out;
  }
  NetlinkSocket s(kTimeoutS);
  if (s.error()) {
    out.error = s.error();
    return out;
  }
  alignas(nlmsghdr) char req[NLMSG_SPACE(sizeof(ndmsg))] = {};
  auto* h = reinterpret_cast<nlmsghdr*>(req);
  h->nlmsg_len = NLMSG_LENGTH(sizeof(ndmsg));
  h->nlmsg_type = RTM_GETNEIGH;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* nd = static_cast<ndmsg*>(NLMSG_DATA(h));
  nd->ndm_family = static_cast<unsigned char>(want.family);
  // The dump is filtered here, not by the kernel: older kernels ignore a filter without strict checking.
  int err = s.exchange(h, [&](const nlmsghdr* m) {
               if (m->nlmsg_type != RTM_NEWNEIGH || m->nlmsg_len < NLMSG_LENGTH(sizeof(ndmsg))) return true;
               const auto* got = static_cast<const ndmsg*>(NLMSG_DATA(m));
               if (got->ndm_family != want.family || (ifindex > 0 && got->ndm_ifindex != ifindex)) return true;
               int len = static_cast<int>(m->nlmsg_len - NLMSG_LENGTH(sizeof(ndmsg)));
               bool match = false;
               std::string lladdr;
               for (auto* a = reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(got) +
                                                              NLMSG_ALIGN(sizeof(ndmsg)));
                    RTA_OK(a, len); a = RTA_NEXT(a, len)) {
                 size_t n = RTA_PAYLOAD(a);
                 if (a->rta_type == NDA_DST && n == want.size() && std::memcmp(RTA_DATA(a), want.bytes, n) == 0)
                   match = true;
                 if (a->rta_type == NDA_LLADDR) lladdr = lladdr_text(static_cast<const unsigned char*>(RTA_DATA(a)), n);
               }
               if (match && !out.found) {  // the first entry (a dump without an interface can hold one per interface)
                 out.found = true;
                 out.state = nud_name(got->ndm_state);
                 out.lladdr = lladdr;
               }
               return true;  // read the dump to its end, so that the socket closes clean
             }).err;
  if (err) {
    out = Neighbour{};
    out.error = err;
  }
  return out;
}

}  // namespace netlink_impl

Route route_to(const std::string& address) { return netlink_impl::route(address); }

bool Neighbour::resolved() const { return found && state != "INCOMPLETE" && state != "FAILED" && state != "NONE"; }

Neighbour neighbour(const std::string& address, int ifindex) { return netlink_impl::neigh(address, ifindex); }

}  // namespace coldstart::net
