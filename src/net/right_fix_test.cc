// The right fix, not only the right layer (issue 48), on the handmade network of test_samples.h (the route leaves by
// eth0 via 10.0.0.1, from 10.0.0.2): each outcome the lab recorded (tests/net/test_right_fix.py) is put at the layer
// its evidence names, and its fix names the setting that would change it. The real networks are tests/net's.
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <regex>
#include <utility>

#include "net/icmp.h"
#include "net/target_check.h"
#include "net/test_samples.h"

namespace coldstart::net {
namespace {

using test::answering_on;
using test::connected;
using test::dropped_here;
using test::failed;
using test::handmade;
using test::icmp_error;
using test::timed_out;

const Check& layer_of(const TargetReport& r, Layer l) {
  for (const Check& c : r.layers)
    if (c.layer == l) return c;
  static const Check none;
  ADD_FAILURE() << "no " << name(l) << " layer";
  return none;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const Target kStore = parse_target("203.0.113.10:29500");

TargetReport check(const NetOptions& o, const Target& t = kStore) {
  return check_target(t, HostFacts{}, {}, {}, {}, o);
}

// ---- Who dropped or refused it, beyond the gateway

TEST(RightFix, IcmpNamesKindAndSender) {
  IcmpReport r{true, false, false, 3, 10, EHOSTUNREACH, "203.0.113.10"};
  EXPECT_EQ(r.kind(), IcmpKind::prohibited);
  EXPECT_EQ(r.describe(), "ICMP destination unreachable, code 10 (host administratively prohibited) from 203.0.113.10");
  r.code = 1;
  EXPECT_EQ(r.kind(), IcmpKind::host_unreachable);
  r.code = 3;
  EXPECT_EQ(r.kind(), IcmpKind::port_unreachable);
  r.code = 0;
  EXPECT_EQ(r.kind(), IcmpKind::no_route);
  r.type = 11;
  EXPECT_EQ(r.kind(), IcmpKind::ttl_exceeded);
  r = IcmpReport{true, false, true, 1, 1, EACCES, "fd00::1"};  // ICMPv6 administratively prohibited
  EXPECT_EQ(r.kind(), IcmpKind::prohibited);
  EXPECT_TRUE(has(r.describe(), "ICMPv6 destination unreachable, code 1")) << r.describe();
  r.local = true;
  EXPECT_EQ(r.kind(), IcmpKind::none);
  EXPECT_EQ(IcmpReport{}.kind(), IcmpKind::none);
}

TEST(RightFix, APortTheHostsFirewallDropsIsTheTransportsWhenAnotherPortAnswers) {
  TargetReport r = check(answering_on(handmade(timed_out()), 22, failed(ECONNREFUSED)));
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::transport) << broken->summary;
  EXPECT_TRUE(has(broken->summary, "203.0.113.10 answers on port 22")) << broken->summary;
  EXPECT_TRUE(has(broken->summary, "drops port 29500")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "firewall-cmd --add-port=29500/tcp")) << broken->fix;
  EXPECT_EQ(layer_of(r, Layer::forward).status, Status::ok);
  // No port answers: nothing comes back from beyond the gateway at all, which stays the forward layer's.
  r = check(handmade(timed_out()));
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_EQ(r.first(Status::broken)->layer, Layer::forward);
  EXPECT_TRUE(has(r.first(Status::broken)->summary, "on any port asked")) << r.first(Status::broken)->summary;
  // A reset from a router on another port is not the host answering.
  Connect router_reset = icmp_error(ECONNREFUSED, 3, 3, "10.0.0.1");
  r = check(answering_on(handmade(timed_out()), 22, router_reset));
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_EQ(r.first(Status::broken)->layer, Layer::forward);
}

TEST(RightFix, AnIcmpRejectFromTheHostItselfIsItsFirewallNotARoute) {
  TargetReport r = check(handmade(icmp_error(EHOSTUNREACH, 3, 10, "203.0.113.10")));  // firewalld's default reject
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::transport);
  EXPECT_TRUE(has(broken->summary, "203.0.113.10 itself rejects port 29500")) << broken->summary;
  EXPECT_TRUE(has(broken->summary, "EHOSTUNREACH")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "firewall-cmd --add-port=29500/tcp")) << broken->fix;
  EXPECT_EQ(layer_of(r, Layer::forward).status, Status::ok);
  // nftables' plain reject: ICMP port unreachable, which connect() reports as ECONNREFUSED.
  r = check(handmade(icmp_error(ECONNREFUSED, 3, 3, "203.0.113.10")));
  broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(has(broken->summary, "itself rejects port 29500")) << broken->summary;
  // Before the job, a reset at MASTER_ADDR is its host answering; a firewall's reject is not.
  NetOptions before = handmade(icmp_error(ECONNREFUSED, 3, 3, "203.0.113.10"));
  before.before_job = true;
  EXPECT_EQ(layer_of(check(before, parse_target("203.0.113.10:29500", "MASTER_ADDR")), Layer::transport).status,
            Status::broken);
}

TEST(RightFix, ARejectOnTheWayNamesTheRouterThatSentIt) {
  TargetReport r = check(handmade(icmp_error(EHOSTUNREACH, 3, 13, "10.0.0.1")));
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::forward);
  EXPECT_TRUE(has(broken->summary, "the gateway 10.0.0.1 rejects the connection")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "forward rules")) << broken->fix;
  EXPECT_FALSE(has(broken->fix, "ip_forward")) << broken->fix;
  // A router further out that cannot deliver (no ARP answer from the host there, or an unreachable route).
  r = check(handmade(icmp_error(EHOSTUNREACH, 3, 1, "198.51.100.1")));
  broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::forward);
  EXPECT_TRUE(has(broken->summary, "the router 198.51.100.1 beyond the gateway 10.0.0.1 cannot deliver"))
      << broken->summary;
  // A routing loop: time exceeded.
  r = check(handmade(icmp_error(EHOSTUNREACH, 11, 0, "198.51.100.1")));
  broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(has(broken->summary, "loop")) << broken->summary;
  // No route at a router further out: the route layer, naming that router.
  r = check(handmade(icmp_error(ENETUNREACH, 3, 0, "198.51.100.1")));
  broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::route);
  EXPECT_TRUE(has(broken->summary, "the router 198.51.100.1 beyond the gateway 10.0.0.1 reports no route"))
      << broken->summary;
  EXPECT_TRUE(has(broken->fix, "check the routes on 198.51.100.1")) << broken->fix;
}

TEST(RightFix, ThisHostsOwnFirewallIsNotBeyondTheGateway) {
  TargetReport r = check(handmade(dropped_here()));
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::transport);
  EXPECT_TRUE(has(broken->summary, "never left this host")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "iptables -S OUTPUT")) << broken->fix;
  EXPECT_EQ(layer_of(r, Layer::forward).status, Status::not_checked);
  // Its reject (ICMP from this host's own address) likewise.
  r = check(handmade(icmp_error(EHOSTUNREACH, 3, 13, "10.0.0.2")));
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_EQ(r.first(Status::broken)->layer, Layer::transport);
  EXPECT_TRUE(has(r.first(Status::broken)->summary, "this host's own firewall")) << r.first(Status::broken)->summary;
}

TEST(RightFix, AProxysHostFirewallIsNamedAsSuch) {
  const ProxyEnv proxies = {{"https_proxy", "http://10.0.0.9:3128"}};
  NetOptions o = answering_on(handmade(connected()), 3128, icmp_error(EHOSTUNREACH, 3, 10, "10.0.0.9"));
  TargetReport r = check_target(parse_target("https://inet.test/"), HostFacts{}, proxies, {}, {}, o);
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::proxy) << broken->summary;
  EXPECT_TRUE(has(broken->summary, "the proxy's host 10.0.0.9 rejects port 3128")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "allow TCP port 3128 in the firewall of 10.0.0.9")) << broken->fix;
}

// ---- Routes of a special type

TEST(RightFix, ARejectingRouteIsNamedWithItsRemovalNotADefaultRoute) {
  NetOptions o = handmade(connected());
  o.probes.route = [](const std::string&) {
    Route r;
    r.error = EHOSTUNREACH;
    r.type = "unreachable";
    r.reject = RejectEntry{"unreachable", "unreachable 203.0.113.0/24", "ip route del unreachable 203.0.113.0/24"};
    return r;
  };
  HostFacts facts;
  facts.default_route = DefaultRoute{"10.0.0.1", "eth0"};
  TargetReport r = check_target(kStore, facts, {}, {}, {}, o);
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::route);
  EXPECT_TRUE(has(broken->summary, "the route `unreachable 203.0.113.0/24` refuses 203.0.113.10")) << broken->summary;
  EXPECT_TRUE(has(broken->summary, "before the default route")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "remove it: ip route del unreachable 203.0.113.0/24")) << broken->fix;
  EXPECT_FALSE(has(broken->fix, "add a route")) << broken->fix;
  // Not found in the tables (a sandbox that refuses the dump): the type, and where to look.
  o.probes.route = [](const std::string&) { return Route{EACCES, "prohibit"}; };
  r = check_target(kStore, facts, {}, {}, {}, o);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_TRUE(has(r.first(Status::broken)->fix, "ip route show table all type prohibit"))
      << r.first(Status::broken)->fix;
  // No route at all, though a default route exists: a policy rule sent the lookup elsewhere.
  o.probes.route = [](const std::string&) { return Route{ENETUNREACH}; };
  r = check_target(kStore, facts, {}, {}, {}, o);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_TRUE(has(r.first(Status::broken)->fix, "ip rule show")) << r.first(Status::broken)->fix;
  // ... and without one, a default route is the fix. An IPv6 default route says nothing of an IPv4 address.
  facts.default_route = DefaultRoute{"fe80::1", "eth0"};
  r = check_target(kStore, facts, {}, {}, {}, o);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_TRUE(has(r.first(Status::broken)->fix, "ip route add default")) << r.first(Status::broken)->fix;
}

// ---- Warnings that explain the failure

TEST(RightFix, AFakeIpWithNoTunDeviceIsNamedWhereTheFailureIs) {
  // The gateway reports no route to the fake IP: the tool's TUN device is not there.
  const Target api = parse_target("api.example.com:443");
  TargetReport r = check(handmade(icmp_error(ENETUNREACH, 3, 0, "10.0.0.1"), "198.18.0.7"), api);
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::route);
  EXPECT_TRUE(has(broken->summary, "198.18.0.7 is not the host's address but a fake IP")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "fake-ip-filter")) << broken->fix;
  EXPECT_FALSE(has(broken->fix, "check the routes on")) << broken->fix;
  EXPECT_TRUE(has(broken->evidence.back(), "resolve: api.example.com resolves to 198.18.0.7"))
      << broken->evidence.back();
  // Dropped beyond the gateway: the same.
  r = check(handmade(timed_out(), "198.18.0.7"), api);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_EQ(r.first(Status::broken)->layer, Layer::forward);
  EXPECT_TRUE(has(r.first(Status::broken)->fix, "fake-ip-filter")) << r.first(Status::broken)->fix;
  // On a TUN device (on-link, no gateway) the tool runs: a failure there keeps its own fix.
  NetOptions tun = handmade(failed(ECONNREFUSED), "198.18.0.7");
  tun.probes.route = [](const std::string&) { return Route{0, "unicast", "Meta", 9, "", "198.18.0.1"}; };
  r = check(tun, api);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_FALSE(has(r.first(Status::broken)->fix, "fake-ip-filter")) << r.first(Status::broken)->fix;
  // An ordinary address: nothing added.
  r = check(handmade(timed_out()), api);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_FALSE(has(r.first(Status::broken)->summary, "fake IP")) << r.first(Status::broken)->summary;
}

// ---- A connection that works and a service that never answers in full-size packets

TEST(RightFix, AServiceAnsweringOnlyInSmallPacketsIsAPathMtuBlackHole) {
  auto answering = [](bool small_too) {
    return [small_too](const std::string&, double, int mss) {
      Fetch f;
      f.attempted = true;
      f.library = "libcurl (handmade)";
      if (mss > 0 && small_too) {
        f.http_status = 200;
      } else {
        f.curl_code = 28;
        f.curl_error = "Timeout was reached";
      }
      return f;
    };
  };
  const Target big = parse_target("https://inet.test/big");
  NetOptions o = handmade(connected());
  o.probes.fetch = answering(true);
  TargetReport r = check(o, big);
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::forward);
  EXPECT_TRUE(has(broken->summary, "path MTU black hole")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "clamp the TCP MSS")) << broken->fix;
  EXPECT_EQ(layer_of(r, Layer::service).status, Status::not_checked);
  // On-link: the link's two ends.
  o.probes.route = [](const std::string&) { return Route{0, "unicast", "eth0", 2, "", "10.0.0.2"}; };
  r = check(o, big);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_EQ(r.first(Status::broken)->layer, Layer::next_hop);
  EXPECT_TRUE(has(r.first(Status::broken)->fix, "different MTUs")) << r.first(Status::broken)->fix;
  // Small packets stall too: the service's own, as before.
  o = handmade(connected());
  o.probes.fetch = answering(false);
  r = check(o, big);
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_EQ(r.first(Status::broken)->layer, Layer::service);
}

// ---- A proxy that refuses this client

// A proxy at 10.0.0.9:3128 answering each question as `answer` says: by the CONNECT's host and port ("" and 0: the
// greeting, a connection that asks nothing).
NetOptions proxy_answering(std::function<Tunnel(const std::string& host, uint16_t port)> answer) {
  NetOptions o = handmade(connected());
  o.probes.tunnel = [answer](const std::string&, uint16_t, const std::string& host, uint16_t port, double) {
    Tunnel t = answer(host, port);
    t.to_proxy = connected();
    return t;
  };
  return o;
}
Tunnel status(int code) { return Tunnel{{}, code, "HTTP/1.1 " + std::to_string(code) + " x", ""}; }
Tunnel hang_up() {
  Tunnel t{{}, 0, "", "the proxy closed the connection without an answer"};
  t.hung_up = true;
  return t;
}
Tunnel no_word() { return Tunnel{{}, 0, "", "the proxy sent no answer before a request within 0.5 s"}; }

const Check* refusal(const NetOptions& o, const Target& t, TargetReport& r) {
  r = check_target(t, HostFacts{}, {{"https_proxy", "http://10.0.0.9:3128"}, {"http_proxy", "http://10.0.0.9:3128"}},
                   {}, {}, o);
  const Check* broken = r.first(Status::broken);
  EXPECT_NE(broken, nullptr);
  if (broken) EXPECT_EQ(broken->layer, Layer::proxy) << broken->summary;
  return broken;
}

TEST(RightFix, AProxyThatHangsUpOnThisClientBeforeAnyRequestIsItsAllowList) {
  TargetReport r;
  const Check* broken = refusal(proxy_answering([](const std::string&, uint16_t) { return hang_up(); }),
                                parse_target("https://inet.test/"), r);
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(has(broken->summary, "refuses this client (10.0.0.2)")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "allow-lan: true")) << broken->fix;
  EXPECT_TRUE(has(broken->fix, "Allow 10.0.0.2")) << broken->fix;
  EXPECT_FALSE(has(broken->fix, "ConnectPort")) << broken->fix;
}

TEST(RightFix, A403ToEveryDestinationNamesTheClientAndAPortServedElsewhereNamesThePort) {
  TargetReport r;
  // 403 to anything asked, though it waits for a request (tinyproxy's Allow, squid's http_access).
  const Check* broken =
      refusal(proxy_answering([](const std::string& host, uint16_t) { return host.empty() ? no_word() : status(403); }),
              parse_target("http://inet.test:29999/"), r);
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(has(broken->summary, "refuses a name that does not exist the same way")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "Allow 10.0.0.2")) << broken->fix;
  // The same host on 443 is served: the port (tinyproxy's ConnectPort).
  broken = refusal(proxy_answering([](const std::string& host, uint16_t port) {
                     return host.empty() ? no_word() : port == 443 ? status(200) : status(403);
                   }),
                   parse_target("http://inet.test:29999/"), r);
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(has(broken->summary, "it refuses port 29999")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "ConnectPort 29999")) << broken->fix;
  EXPECT_FALSE(has(broken->fix, "Allow")) << broken->fix;
  // The host refused on 443 too, a name that does not exist served (the proxy's DNS said so): the destination.
  broken = refusal(proxy_answering([](const std::string& host, uint16_t) {
                     return host.empty() ? no_word() : host == kNowhereHost ? status(503) : status(403);
                   }),
                   parse_target("http://inet.test:29999/"), r);
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(has(broken->summary, "it refuses this destination")) << broken->summary;
  EXPECT_TRUE(has(broken->fix, "tinyproxy Filter")) << broken->fix;
  // Nothing tells (the name's lookup outlasts the timeout): all three named, none asserted.
  broken = refusal(proxy_answering([](const std::string& host, uint16_t port) {
                     return host.empty() || port == 443 ? no_word() : status(403);
                   }),
                   parse_target("http://inet.test:29999/"), r);
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(has(broken->summary, "asking again did not tell")) << broken->summary;
}

// ---- Words that contradict the lines above them

// Another client's proxy path, beside a direct connection: its words name which path fails, and never say the direct
// one fails where it connected (a rendezvous with a refusing http_proxy; a URL that curl's no_proxy CIDR sends direct
// and urllib, which reads no CIDR, through the proxy).
TEST(RightFix, AnotherClientsProxyPathNeverSaysTheDirectPathFails) {
  const std::regex direct_fails("direct[^;]*fail");
  const ProxyEnv rendezvous_proxies = {{"http_proxy", "http://10.0.0.9:3128"}};
  const ProxyEnv cidr_proxies = {{"https_proxy", "http://10.0.0.9:3128"}, {"no_proxy", "203.0.113.0/24"}};
  const std::pair<Target, const ProxyEnv*> cases[] = {
      {parse_target("203.0.113.10:29500", "MASTER_ADDR"), &rendezvous_proxies},
      {parse_target("https://203.0.113.10/"), &cidr_proxies}};
  for (const auto& c : cases)
    for (const Connect& direct : {connected(), failed(ECONNREFUSED), timed_out()})
      for (int status : {200, 403, 0}) {  // 0: the proxy refuses the connection
        NetOptions o = handmade(direct);
        o.probes.tunnel = [status](const std::string&, uint16_t, const std::string&, uint16_t, double) {
          Tunnel t{status ? connected() : failed(ECONNREFUSED), status, "HTTP/1.1 " + std::to_string(status) + " x"};
          return t;
        };
        o.probes.fetch = [](const std::string&, double, int) { return Fetch{true, "libcurl (handmade)", 0, "", 200}; };
        const TargetReport r = check_target(c.first, HostFacts{}, *c.second, {}, {}, o);
        const Check& proxy = layer_of(r, Layer::proxy);
        SCOPED_TRACE(c.first.text + " " + direct.describe() + " proxy " + std::to_string(status));
        ASSERT_TRUE(has(proxy.summary, "urllib")) << proxy.summary;  // the other client's path was checked
        EXPECT_FALSE(std::regex_search(proxy.summary, direct_fails)) << proxy.summary;
        if (status != 200) EXPECT_TRUE(has(proxy.summary, "and that proxy path fails")) << proxy.summary;
        if (status != 200 && direct.ok) EXPECT_TRUE(has(proxy.summary, ", which works")) << proxy.summary;
      }
}

}  // namespace
}  // namespace coldstart::net
