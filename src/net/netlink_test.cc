// rtnetlink against the running kernel: loopback routes, the default route, a fresh namespace with no route at all,
// and the neighbour table (an entry made with `ip neigh` in a namespace of the test's own).
#include "net/netlink.h"

#include <net/if.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>

#include <gtest/gtest.h>

#include "net/host.h"
#include "util/fs.h"

namespace coldstart::net::netlink_test {
namespace {

// Runs `body` in a forked child inside a fresh network namespace; returns what it wrote, or "skip" when unshare is
// refused (not root).
std::string in_fresh_netns(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    std::string out = ::unshare(CLONE_NEWNET) != 0 ? "skip" : body();
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return got;
}

bool kernel_answers_routes() {
  Route r = route_to("127.0.0.1");
  return r.error != EOPNOTSUPP && r.error != EPROTONOSUPPORT && r.error != ETIMEDOUT;
}

TEST(RouteTo, LoopbackIsLocalOnLo) {
  if (!kernel_answers_routes()) GTEST_SKIP() << "this kernel (a sandbox) does not answer RTM_GETROUTE";
  Route r = route_to("127.0.0.1");
  ASSERT_EQ(r.error, 0);
  EXPECT_EQ(r.type, "local");
  EXPECT_EQ(r.dev, "lo");
  EXPECT_EQ(r.ifindex, static_cast<int>(::if_nametoindex("lo")));
  EXPECT_EQ(r.gateway, "");
  EXPECT_EQ(r.src, "127.0.0.1");
  EXPECT_TRUE(r.ok());
}

TEST(RouteTo, Ipv6LoopbackWhenPresent) {
  if (!kernel_answers_routes()) GTEST_SKIP() << "this kernel (a sandbox) does not answer RTM_GETROUTE";
  bool has_v6_lo = false;
  for (const auto& i : collect_host(Root("/")).context.interfaces)
    for (const auto& a : i.ipv6)
      if (a == "::1") has_v6_lo = true;
  if (!has_v6_lo) GTEST_SKIP() << "no ::1 here (IPv6 off)";
  Route r = route_to("::1");
  ASSERT_EQ(r.error, 0);
  EXPECT_EQ(r.type, "local");
  EXPECT_EQ(r.dev, "lo");
}

TEST(RouteTo, TheDefaultRouteForAnOutsideAddress) {
  if (!kernel_answers_routes()) GTEST_SKIP() << "this kernel (a sandbox) does not answer RTM_GETROUTE";
  DefaultRoute d = collect_host(Root("/")).default_route;
  if (d.dev.empty() || d.gateway.find(':') != std::string::npos) GTEST_SKIP() << "no IPv4 default route here";
  Route r = route_to("198.51.100.7");  // TEST-NET-2: never on a local subnet
  ASSERT_EQ(r.error, 0);
  EXPECT_EQ(r.type, "unicast");
  EXPECT_FALSE(r.dev.empty());
  EXPECT_FALSE(r.src.empty());
  // Policy routing (a full-tunnel VPN's rules) may send it elsewhere than the main table's default.
  if (r.dev == d.dev) {
    EXPECT_EQ(r.gateway, d.gateway);
  }
}

TEST(RouteTo, NotAnAddress) {
  Route r = route_to("example.com");
  EXPECT_EQ(r.error, EINVAL);
  EXPECT_EQ(r.type, "");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(route_to("").error, EINVAL);
  EXPECT_EQ(route_to("10.0.0.300").error, EINVAL);
}

TEST(RouteTo, NoRouteInAFreshNamespace) {
  std::string got = in_fresh_netns([] {
    Route r4 = route_to("10.1.2.3");
    Route r6 = route_to("2001:db8::1");
    return std::to_string(r4.error) + "/" + r4.type + "/" + std::to_string(r6.error);
  });
  if (got == "skip") GTEST_SKIP() << "unshare(CLONE_NEWNET) refused (not root)";
  if (got.rfind(std::to_string(EOPNOTSUPP) + "/", 0) == 0) GTEST_SKIP() << "no RTM_GETROUTE here";
  // IPv6 answers ENETUNREACH too, or EAFNOSUPPORT where IPv6 is off.
  EXPECT_TRUE(got == std::to_string(ENETUNREACH) + "//" + std::to_string(ENETUNREACH) ||
              got == std::to_string(ENETUNREACH) + "//" + std::to_string(EAFNOSUPPORT))
      << got;
}

TEST(RouteTo, RejectRoutesNameTheirType) {
  if (!find_on_path("ip")) GTEST_SKIP() << "no ip(8) here";
  std::string got = in_fresh_netns([] {
    if (std::system("ip link set lo up && ip route add unreachable 10.7.0.0/16 && ip route add prohibit 10.8.0.0/16 "
                    "&& ip route add blackhole 10.9.0.0/16") != 0)
      return std::string("noip");
    Route u = route_to("10.7.1.1"), p = route_to("10.8.1.1"), b = route_to("10.9.1.1");
    return u.type + ":" + std::to_string(u.error) + " " + p.type + ":" + std::to_string(p.error) + " " + b.type + ":" +
           std::to_string(b.error);
  });
  if (got == "skip") GTEST_SKIP() << "unshare(CLONE_NEWNET) refused (not root)";
  if (got == "noip") GTEST_SKIP() << "ip route add refused here";
  EXPECT_EQ(got, "unreachable:" + std::to_string(EHOSTUNREACH) + " prohibit:" + std::to_string(EACCES) +
                     " blackhole:" + std::to_string(EINVAL));
}

// A refused lookup names the entry that refused it, beside a default route it overrides: the most specific route of
// its type in any table, else the first rule of its action (an `unreachable` rule answers ENETUNREACH).
TEST(RouteTo, ARefusedLookupNamesTheEntryAndHowToRemoveIt) {
  if (!find_on_path("ip")) GTEST_SKIP() << "no ip(8) here";
  std::string got = in_fresh_netns([] {
    if (std::system("ip link set lo up && ip link add d0 type veth peer name d1 && ip link set d0 up && "
                    "ip addr add 192.0.2.2/24 dev d0 && ip route add default via 192.0.2.1 && "
                    "ip route add unreachable 10.7.0.0/16 && ip route add unreachable 10.7.1.0/24 && "
                    "ip route add blackhole 10.9.0.0/16 table 100 && ip rule add to 10.9.0.0/16 lookup 100 "
                    "priority 900 && ip rule add to 10.8.0.0/16 prohibit priority 1000 && "
                    "ip rule add to 10.6.0.0/16 unreachable priority 1100") != 0)
      return std::string("noip");
    std::string out;
    for (const char* a : {"10.7.1.1", "10.9.1.1", "10.8.1.1", "10.6.1.1"}) {
      Route r = route_to(a);
      out += r.type + "|" + r.reject.text + "|" + r.reject.remove + "\n";
    }
    return out;
  });
  if (got == "skip") GTEST_SKIP() << "unshare(CLONE_NEWNET) refused (not root)";
  if (got == "noip") GTEST_SKIP() << "ip route add refused here (no veth interfaces?)";
  EXPECT_EQ(got,
            "unreachable|unreachable 10.7.1.0/24|ip route del unreachable 10.7.1.0/24\n"
            "blackhole|blackhole 10.9.0.0/16 table 100|ip route del blackhole 10.9.0.0/16 table 100\n"
            "prohibit|rule 1000: from all to 10.8.0.0/16 prohibit|ip rule del priority 1000\n"
            "unreachable|rule 1100: from all to 10.6.0.0/16 unreachable|ip rule del priority 1100\n");
}

TEST(Neighbour, NotAnAddress) {
  EXPECT_EQ(neighbour("gateway", 0).error, EINVAL);
  EXPECT_FALSE(neighbour("gateway", 0).found);
}

TEST(Neighbour, ResolvedMeansKnownOrNotNeeded) {
  Neighbour n;
  EXPECT_FALSE(n.resolved());
  n.found = true;
  for (const char* s : {"REACHABLE", "STALE", "DELAY", "PROBE", "PERMANENT", "NOARP"}) {
    n.state = s;
    EXPECT_TRUE(n.resolved()) << s;
  }
  for (const char* s : {"INCOMPLETE", "FAILED", "NONE"}) {
    n.state = s;
    EXPECT_FALSE(n.resolved()) << s;
  }
}

// Entries made by hand on a veth (or dummy) interface in a namespace of the test's own: a permanent one, a stale one,
// an address that has none, and an interface that does not hold it.
TEST(Neighbour, EntriesOfAnInterface) {
  if (!find_on_path("ip")) GTEST_SKIP() << "no ip(8) here";
  std::string got = in_fresh_netns([] {
    if (std::system("{ ip link add cs-dummy0 type veth peer name cs-peer0 || ip link add cs-dummy0 type dummy; } "
                    "2>/dev/null && ip link set cs-dummy0 up && ip addr add 10.66.0.1/24 dev cs-dummy0 && "
                    "ip neigh add 10.66.0.2 lladdr 02:00:00:00:00:02 dev cs-dummy0 nud permanent && "
                    "ip neigh add 10.66.0.3 lladdr 02:00:00:00:00:03 dev cs-dummy0 nud stale") != 0)
      return std::string("noip");
    int idx = static_cast<int>(::if_nametoindex("cs-dummy0"));
    Neighbour a = neighbour("10.66.0.2", idx), b = neighbour("10.66.0.3", 0), c = neighbour("10.66.0.4", idx),
              d = neighbour("10.66.0.2", idx + 100);
    if (a.error) return "error " + std::to_string(a.error);
    return a.state + "," + a.lladdr + "," + (a.resolved() ? "r" : "-") + " " + b.state + "," + b.lladdr + " " +
           (c.found ? "found" : "none") + " " + (d.found ? "found" : "none");
  });
  if (got == "skip") GTEST_SKIP() << "unshare(CLONE_NEWNET) refused (not root)";
  if (got == "noip") GTEST_SKIP() << "neither veth nor dummy interfaces here (modules missing, or a sandbox)";
  if (got.rfind("error ", 0) == 0) GTEST_SKIP() << "the neighbour table cannot be read here: " << got;
  EXPECT_EQ(got, "PERMANENT,02:00:00:00:00:02,r STALE,02:00:00:00:00:03 none none");
}

}  // namespace
}  // namespace coldstart::net::netlink_test
