// The method on loopback, without root: the layers a target gets, where a failed connection is put, and the verdict's
// order. The real networks (a gateway without ARP, NAT, a proxy on Windows' loopback) are tests/net's.
#include "net/diagnose.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "net/target_check.h"
#include "net/test_env.h"
#include "net/test_samples.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

using test::env_of;

// A TCP socket on 127.0.0.1, listening or only bound (a port where nothing listens).
struct LocalPort {
  int fd = -1;
  uint16_t port = 0;
  explicit LocalPort(bool listening) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    if (listening) ::listen(fd, 8);
  }
  ~LocalPort() { ::close(fd); }
};

const Check& layer(const TargetReport& r, Layer l) {
  for (const Check& c : r.layers)
    if (c.layer == l) return c;
  static const Check none;
  ADD_FAILURE() << "no " << name(l) << " layer";
  return none;
}

HostFacts live_facts() { return collect_host(Root("/")); }

TEST(Diagnose, ALocalListenerIsOkAtEveryLayerThatApplies) {
  LocalPort open(true);
  const Target t = parse_target("127.0.0.1:" + std::to_string(open.port));
  TargetReport r = check_target(t, live_facts(), {}, {}, {}, NetOptions{});
  ASSERT_EQ(r.layers.size(), 7u);  // resolve .. service
  EXPECT_EQ(layer(r, Layer::route).status, Status::ok);
  EXPECT_EQ(layer(r, Layer::next_hop).status, Status::skipped);
  EXPECT_EQ(layer(r, Layer::transport).status, Status::ok) << layer(r, Layer::transport).summary;
  EXPECT_EQ(layer(r, Layer::service).status, Status::skipped);
  EXPECT_EQ(r.first(Status::broken), nullptr);
}

TEST(Diagnose, NothingListeningIsTheTransportsAndNamedByItsErrno) {
  LocalPort closed(false);
  const Target t = parse_target("127.0.0.1:" + std::to_string(closed.port));
  TargetReport r = check_target(t, live_facts(), {}, {}, {}, NetOptions{});
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::transport);
  EXPECT_NE(broken->summary.find("ECONNREFUSED"), std::string::npos) << broken->summary;
  EXPECT_FALSE(broken->fix.empty());
}

TEST(Diagnose, ALoopbackProxyThatRefusesUnderWslNatIsTheTrapWithBothFixes) {
  LocalPort closed(false);
  HostFacts f = live_facts();
  f.platform.wsl = true;
  f.platform.wsl_version = "2";
  f.platform.wsl_mode = "nat";
  f.platform.windows_host = "172.29.64.1";
  const ProxyEnv proxies = read_proxy_env(env_of({{"https_proxy", "http://127.0.0.1:" + std::to_string(closed.port)}}));
  TargetReport r = check_target(parse_target("https://api.example.com/"), f, proxies, {}, {}, NetOptions{});
  EXPECT_NE(r.path.find("proxy http://127.0.0.1"), std::string::npos) << r.path;
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::proxy) << broken->summary;
  EXPECT_NE(broken->summary.find("WSL in NAT mode"), std::string::npos) << broken->summary;
  EXPECT_NE(broken->fix.find("https_proxy=http://172.29.64.1:" + std::to_string(closed.port)), std::string::npos)
      << broken->fix;
  EXPECT_NE(broken->fix.find("networkingMode=mirrored"), std::string::npos) << broken->fix;
  EXPECT_EQ(layer(r, Layer::transport).status, Status::not_checked);
  // The same proxy off WSL: nothing listens there in this namespace, said as such.
  f.platform = {};
  r = check_target(parse_target("https://api.example.com/"), f, proxies, {}, {}, NetOptions{});
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_NE(r.first(Status::broken)->summary.find("nothing listens on the proxy"), std::string::npos);
}

using test::connected;
using test::failed;
using test::handmade;

TEST(Diagnose, EnetunreachAfterTheRouteWasFoundBreaksTheRoute) {
  // The kernel here had a route; a router beyond the gateway (which answers ARP) reports none.
  TargetReport r =
      check_target(parse_target("203.0.113.10:443"), HostFacts{}, {}, {}, {}, handmade(failed(ENETUNREACH)));
  const Check* broken = r.first(Status::broken);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->layer, Layer::route) << broken->summary;
  EXPECT_NE(broken->summary.find("ENETUNREACH"), std::string::npos) << broken->summary;
  EXPECT_NE(broken->summary.find("10.0.0.1"), std::string::npos) << broken->summary;
  ASSERT_FALSE(broken->evidence.empty());
  EXPECT_NE(broken->evidence.front().find("connect(203.0.113.10:443)"), std::string::npos) << broken->evidence.front();
  EXPECT_NE(broken->fix.find("no route to 203.0.113.10"), std::string::npos) << broken->fix;
  EXPECT_EQ(layer(r, Layer::next_hop).status, Status::ok);
  EXPECT_EQ(layer(r, Layer::forward).status, Status::not_checked);
  EXPECT_EQ(layer(r, Layer::transport).status, Status::not_checked);
  // And so the verdict: broken at the route, exit 1, not ok.
  NetReport report;
  report.targets = {r};
  const Verdict v = decide_verdict(report);
  EXPECT_EQ(v.status, Status::broken);
  EXPECT_EQ(v.check.layer, Layer::route);
  // The same handmade network, other outcomes: each at the layer its errno names.
  r = check_target(parse_target("203.0.113.10:443"), HostFacts{}, {}, {}, {}, handmade(failed(ECONNREFUSED)));
  ASSERT_NE(r.first(Status::broken), nullptr);
  EXPECT_EQ(r.first(Status::broken)->layer, Layer::transport);
  EXPECT_EQ(layer(r, Layer::route).status, Status::ok);
  r = check_target(parse_target("203.0.113.10:443"), HostFacts{}, {}, {}, {}, handmade(connected()));
  EXPECT_EQ(r.first(Status::broken), nullptr);
}

TEST(Diagnose, BeforeTheJobNothingListeningAtMasterAddrIsItsHostAnswering) {
  const Target master = parse_target("203.0.113.10:29500", "MASTER_ADDR");
  NetOptions opts = handmade(failed(ECONNREFUSED));
  EXPECT_EQ(layer(check_target(master, HostFacts{}, {}, {}, {}, opts), Layer::transport).status, Status::broken);
  opts.before_job = true;  // --peers: the job's rank 0 has not opened its store yet
  const Check transport = layer(check_target(master, HostFacts{}, {}, {}, {}, opts), Layer::transport);
  EXPECT_EQ(transport.status, Status::ok);
  EXPECT_NE(transport.summary.find("nothing listens there yet"), std::string::npos) << transport.summary;
  // Any other target is held to a listener as before.
  EXPECT_EQ(
      layer(check_target(parse_target("203.0.113.10:29500"), HostFacts{}, {}, {}, {}, opts), Layer::transport).status,
      Status::broken);
}

TEST(Diagnose, AProxysFakeIpAnswerIsAResolveWarning) {
  TargetReport r =
      check_target(parse_target("api.example.com:443"), HostFacts{}, {}, {}, {}, handmade(connected(), "198.18.0.7"));
  const Check& resolve = layer(r, Layer::resolve);
  EXPECT_EQ(resolve.status, Status::warn);
  EXPECT_NE(resolve.summary.find("198.18.0.7"), std::string::npos) << resolve.summary;
  EXPECT_NE(resolve.summary.find("fake-IP"), std::string::npos) << resolve.summary;
  EXPECT_NE(resolve.fix.find("fake-ip-filter"), std::string::npos) << resolve.fix;
  // Just outside the range: an ordinary answer.
  r = check_target(parse_target("api.example.com:443"), HostFacts{}, {}, {}, {}, handmade(connected(), "198.20.0.1"));
  EXPECT_EQ(layer(r, Layer::resolve).status, Status::ok) << layer(r, Layer::resolve).summary;
}

// A host whose name resolves to IPv6 first, with no IPv6 route (the kernel answers ENETUNREACH for it), and to IPv4,
// which routes; `mapped` is what c10d's first lookup (AF_INET6 with IPv4 mapped) gets.
NetOptions dual_stack(std::vector<std::string> addresses, Resolution mapped = Resolution{{"::ffff:203.0.113.10"}}) {
  NetOptions o = handmade(connected());
  o.probes.resolve = [addresses, mapped](const std::string&, double, Lookup how) {
    return how == Lookup::ipv6_mapped ? mapped : Resolution{addresses};
  };
  auto unicast = o.probes.route;
  o.probes.route = [unicast](const std::string& address) {
    if (address.find(':') == std::string::npos) return unicast(address);
    Route none;
    none.error = ENETUNREACH;
    return none;
  };
  return o;
}

TEST(Diagnose, AMasterAddrResolvingFirstToAnUnroutedIpv6AddressIsAResolveWarning) {
  const Target master = parse_target("master.example:29500", "MASTER_ADDR");
  TargetReport r = check_target(master, HostFacts{}, {}, {}, {}, dual_stack({"2001:db8::5", "203.0.113.10"}));
  const Check& resolve = layer(r, Layer::resolve);
  EXPECT_EQ(resolve.status, Status::warn) << resolve.summary;
  EXPECT_NE(resolve.summary.find("resolves first to IPv6 2001:db8::5, which has no route here"), std::string::npos)
      << resolve.summary;
  EXPECT_NE(resolve.summary.find("pytorch/pytorch#121807"), std::string::npos);
  // Every address, in getaddrinfo's order, with its route.
  const std::string evidence = join(resolve.evidence, "\n");
  EXPECT_NE(evidence.find("2001:db8::5 (IPv6): no route (ENETUNREACH)\n203.0.113.10 (IPv4): a route, dev eth0"),
            std::string::npos)
      << evidence;
  EXPECT_NE(resolve.fix.find("MASTER_ADDR=203.0.113.10"), std::string::npos) << resolve.fix;
  EXPECT_NE(resolve.fix.find("/etc/gai.conf"), std::string::npos) << resolve.fix;
  // The layers below take the IPv4 address: the route is fine, and the verdict is the warning, not a broken route.
  EXPECT_EQ(layer(r, Layer::route).status, Status::ok) << layer(r, Layer::route).summary;
  EXPECT_EQ(r.first(Status::broken), nullptr);
  // IPv4 first, or no IPv4 route to fall back on: nothing to say at this layer.
  r = check_target(master, HostFacts{}, {}, {}, {}, dual_stack({"203.0.113.10", "2001:db8::5"}));
  EXPECT_EQ(layer(r, Layer::resolve).status, Status::ok) << layer(r, Layer::resolve).summary;
  r = check_target(master, HostFacts{}, {}, {}, {}, dual_stack({"2001:db8::5", "2001:db8::6"}));
  EXPECT_EQ(layer(r, Layer::resolve).status, Status::ok);
  EXPECT_EQ(layer(r, Layer::route).status, Status::broken);
  // A URL's client (curl) is not c10d: its name is asked as before.
  r = check_target(parse_target("https://master.example/"), HostFacts{}, {}, {}, {},
                   dual_stack({"2001:db8::5", "203.0.113.10"}));
  EXPECT_EQ(layer(r, Layer::resolve).status, Status::ok);
}

TEST(Diagnose, AMasterAddrThatC10dsIpv6LookupCannotResolveIsBroken) {
  const Target master = parse_target("master.example:29500", "MASTER_ADDR");
  Resolution failed_lookup;
  failed_lookup.gai_error = -2;
  failed_lookup.error = "Name or service not known";
  TargetReport r = check_target(master, HostFacts{}, {}, {}, {}, dual_stack({"203.0.113.10"}, failed_lookup));
  const Check& resolve = layer(r, Layer::resolve);
  EXPECT_EQ(resolve.status, Status::broken);
  EXPECT_NE(resolve.summary.find("never asks for IPv4"), std::string::npos) << resolve.summary;
  EXPECT_NE(resolve.fix.find("MASTER_ADDR=203.0.113.10"), std::string::npos) << resolve.fix;
  NetReport report;
  report.targets = {r};
  EXPECT_EQ(decide_verdict(report).check.layer, Layer::resolve);
}

TEST(Diagnose, NcclAndGlooOffTheRouteToMasterAddrNameBothFixes) {
  const Target master = parse_target("203.0.113.10:29500", "MASTER_ADDR");
  IfChoice nccl{"NCCL", "", {"eth1"}, "10.1.0.2", "default", ""};
  IfChoice gloo{"Gloo", "", {"lo"}, "127.0.1.1", "default: the hostname's address", ""};
  TargetReport r = check_target(master, HostFacts{}, {}, nccl, gloo, handmade(connected()));
  Check route = layer(r, Layer::route);
  EXPECT_EQ(route.status, Status::warn);
  EXPECT_NE(route.summary.find("NCCL would use eth1, not eth0"), std::string::npos) << route.summary;
  EXPECT_NE(route.summary.find("Gloo would use lo, not eth0"), std::string::npos) << route.summary;
  EXPECT_NE(route.fix.find("NCCL_SOCKET_IFNAME=eth0"), std::string::npos) << route.fix;
  EXPECT_NE(route.fix.find("GLOO_SOCKET_IFNAME=eth0"), std::string::npos) << route.fix;
  // One tool off: its fix alone. A tool's own problem counts as off.
  nccl.interfaces = {"eth0"};
  gloo.problem = "GLOO_SOCKET_IFNAME=^lo: no interface named '^lo'";
  route = layer(check_target(master, HostFacts{}, {}, nccl, gloo, handmade(connected())), Layer::route);
  EXPECT_EQ(route.status, Status::warn);
  EXPECT_EQ(route.fix.find("NCCL_SOCKET_IFNAME"), std::string::npos) << route.fix;
  EXPECT_NE(route.fix.find("GLOO_SOCKET_IFNAME=eth0"), std::string::npos) << route.fix;
  // Both on the route's interface: nothing to say. A target that is no rendezvous is not held to it.
  gloo = IfChoice{"Gloo", "", {"eth0"}, "10.0.0.2", "", ""};
  EXPECT_EQ(layer(check_target(master, HostFacts{}, {}, nccl, gloo, handmade(connected())), Layer::route).status,
            Status::ok);
  nccl.interfaces = {"eth1"};
  EXPECT_EQ(layer(check_target(parse_target("203.0.113.10:29500"), HostFacts{}, {}, nccl, gloo, handmade(connected())),
                  Layer::route)
                .status,
            Status::ok);
}

// The process's own layers from hand-built facts: a seccomp sandbox, and a non-root run that may not read PID 1's
// namespace (the parent's then decides).
HostFacts context_facts() {
  HostFacts f;
  f.context.netns = "net:[4026531840]";
  f.context.parent_netns = "net:[4026531840]";
  Interface lo{"lo", 1, true, true, {"127.0.0.1"}};
  Interface eth0{"eth0", 2, true, false, {"10.0.0.2"}};
  f.context.interfaces = {lo, eth0};
  return f;
}

TEST(Diagnose, ASeccompSandboxRefusingSocketsBreaksTheContext) {
  HostFacts f = context_facts();
  f.context.socket_errno = EPERM;
  const std::vector<Check> p = check_process(f);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].layer, Layer::context);
  EXPECT_EQ(p[0].status, Status::broken);
  EXPECT_NE(p[0].summary.find("EPERM"), std::string::npos) << p[0].summary;
  EXPECT_NE(p[0].summary.find("system-call filter"), std::string::npos) << p[0].summary;
  EXPECT_NE(std::find(p[0].evidence.begin(), p[0].evidence.end(), "socket(AF_INET, SOCK_STREAM): EPERM"),
            p[0].evidence.end());
  EXPECT_NE(p[0].fix.find("sandbox"), std::string::npos) << p[0].fix;
}

TEST(Diagnose, PidOnesNamespaceRefusedFallsBackToTheParents) {
  HostFacts f = context_facts();
  f.context.init_error = "EACCES (not root)";
  std::vector<Check> p = check_process(f);
  EXPECT_EQ(p[0].status, Status::ok);
  EXPECT_NE(p[0].summary.find("the host's network namespace"), std::string::npos) << p[0].summary;
  EXPECT_NE(std::find(p[0].evidence.begin(), p[0].evidence.end(), "PID 1's: EACCES (not root)"), p[0].evidence.end());
  // The parent in another namespace says what PID 1 could not.
  f.context.parent_netns = "net:[4026532000]";
  p = check_process(f);
  EXPECT_EQ(p[0].status, Status::ok);
  EXPECT_NE(p[0].summary.find("a network namespace of its own"), std::string::npos) << p[0].summary;
  // Only lo as well: isolated, the parent's namespace named as the outside.
  f.context.interfaces.pop_back();
  p = check_process(f);
  EXPECT_EQ(p[0].status, Status::broken);
  EXPECT_NE(p[0].summary.find("net:[4026532000]"), std::string::npos) << p[0].summary;
}

TEST(Diagnose, TheVerdictIsTheFirstBrokenLayerInsideOutThenTheFirstWarning) {
  NetReport r;
  r.process = {Check{Layer::context, Status::ok, "fine", {}, ""}, Check{Layer::platform, Status::warn, "w", {}, "f"}};
  TargetReport t;
  t.target = parse_target("h:1");
  t.layers = {Check{Layer::resolve, Status::ok, "", {}, ""}, Check{Layer::route, Status::broken, "no route", {}, "x"}};
  r.targets = {t};
  Verdict v = decide_verdict(r);
  EXPECT_EQ(v.status, Status::broken);
  EXPECT_EQ(v.check.layer, Layer::route);
  EXPECT_EQ(v.target, "h:1");
  r.targets[0].layers[1].status = Status::ok;
  v = decide_verdict(r);
  EXPECT_EQ(v.status, Status::warn);
  EXPECT_EQ(v.check.layer, Layer::platform);
  EXPECT_EQ(v.target, "");
  r.process[1].status = Status::ok;
  // A failing peer pair is broken at the layer of its cell.
  PeerMatrix m;
  m.world = 2;
  m.endpoints = {PeerEndpoint{0, "a", "eth0", "10.0.0.1", 1000, "", ""},
                 PeerEndpoint{1, "b", "eth0", "10.0.0.2", 1001, "", ""}};
  m.cells = {{PeerCell{}, PeerCell{false, ETIMEDOUT, 1000, Layer::forward, "dropped"}}, {PeerCell{}, PeerCell{true}}};
  m.cells[1][0].ok = true;
  r.peers = m;
  v = decide_verdict(r);
  EXPECT_EQ(v.status, Status::broken);
  EXPECT_EQ(v.check.layer, Layer::forward);
  EXPECT_EQ(v.target, "peers 0 -> 1");
  r.peers->cells[0][1].ok = true;
  EXPECT_EQ(decide_verdict(r).status, Status::ok);
  // Gloo on rank 1 would listen elsewhere than the matrix probed: a warning at the route, naming both interfaces.
  r.peers->endpoints[0].gloo_interface = "eth0";
  r.peers->endpoints[0].gloo_address = "10.0.0.1";
  r.peers->endpoints[1].gloo_interface = "lo";
  r.peers->endpoints[1].gloo_address = "127.0.1.1";
  v = decide_verdict(r);
  EXPECT_EQ(v.status, Status::warn);
  EXPECT_EQ(v.check.layer, Layer::route);
  EXPECT_EQ(v.target, "peers rank 1");
  EXPECT_NE(v.check.summary.find("Gloo would use lo (127.0.1.1), not eth0 (10.0.0.2)"), std::string::npos)
      << v.check.summary;
  EXPECT_NE(v.check.fix.find("GLOO_SOCKET_IFNAME=eth0"), std::string::npos) << v.check.fix;
  // A failing pair still comes first; Gloo finding no interface at all is a warning too.
  r.peers->cells[0][1].ok = false;
  EXPECT_EQ(decide_verdict(r).status, Status::broken);
  r.peers->cells[0][1].ok = true;
  r.peers->endpoints[1] = PeerEndpoint{1, "b", "eth0", "10.0.0.2", 1001};
  r.peers->endpoints[1].gloo_problem = "GLOO_SOCKET_IFNAME=ib0: no interface named 'ib0'";
  v = decide_verdict(r);
  EXPECT_EQ(v.status, Status::warn);
  EXPECT_NE(v.check.summary.find("Gloo finds no interface: GLOO_SOCKET_IFNAME=ib0"), std::string::npos)
      << v.check.summary;
}

// A failing pair names its peer as HOST:PORT, an IPv6 address in brackets ([fd00::2]:1001, not fd00::2:1001).
TEST(Diagnose, APeersVerdictBracketsAnIpv6PeersAddress) {
  NetReport r;
  PeerMatrix m;
  m.world = 2;
  m.endpoints = {PeerEndpoint{0, "a", "eth0", "fd00::1", 1000, "", ""},
                 PeerEndpoint{1, "b", "eth0", "fd00::2", 1001, "", ""}};
  m.cells = {{PeerCell{}, PeerCell{false, ECONNREFUSED, 1, Layer::transport, "refused"}}, {PeerCell{true}, PeerCell{}}};
  r.peers = m;
  Verdict v = decide_verdict(r);
  EXPECT_EQ(v.status, Status::broken);
  EXPECT_NE(v.check.summary.find("cannot reach rank 1 at [fd00::2]:1001: refused"), std::string::npos)
      << v.check.summary;
  r.peers->endpoints[1].address = "10.0.0.2";  // IPv4 as before
  EXPECT_NE(decide_verdict(r).check.summary.find("at 10.0.0.2:1001: refused"), std::string::npos);
}

// The pipeline's seams: where a failed connection points is a function of the probe, the route and the next hop's
// check alone, and a drop beyond the gateway confirms its ARP.
TEST(Diagnose, BlameIsPlacedFromTheProbeTheRouteAndTheNextHop) {
  TargetFindings found;
  found.probe.connection = connected();
  EXPECT_EQ(place_blame(found, Check{}), std::nullopt);
  found.probe.connection = failed(ENETUNREACH);
  EXPECT_EQ(place_blame(found, Check{}), Layer::route);
  found.probe.connection = failed(ETIMEDOUT);
  EXPECT_EQ(place_blame(found, Check{}), Layer::transport);  // on-link: nothing beyond a gateway
  found.route.gateway = "10.0.0.1";
  EXPECT_EQ(place_blame(found, Check{}), Layer::forward);
  EXPECT_EQ(place_blame(found, Check{Layer::next_hop, Status::broken, "", {}, ""}), Layer::next_hop);
  found.probe.connection = failed(ECONNREFUSED);
  EXPECT_EQ(place_blame(found, Check{}), Layer::transport);
  found.path.via = ProxyDecision{};
  EXPECT_EQ(place_blame(found, Check{}), Layer::proxy);
  const Check unchecked{Layer::next_hop, Status::not_checked, "", {}, ""};
  EXPECT_EQ(confirm_next_hop(unchecked, Layer::forward).status, Status::ok);
  EXPECT_EQ(confirm_next_hop(unchecked, Layer::transport).status, Status::not_checked);
}

// Under --peers the matrix goes into diagnose, which decides the one verdict with it: a failing pair is broken even
// where every target is fine, and no note asks for a target.
TEST(Diagnose, ThePeersMatrixIsWeighedInTheOneVerdict) {
  HostFacts facts;
  Interface eth0;
  eth0.name = "eth0";
  eth0.up = true;
  eth0.ipv4 = {"10.0.0.1"};
  facts.context.interfaces = {eth0};
  PeerMatrix m;
  m.world = 2;
  m.endpoints = {PeerEndpoint{0, "a", "eth0", "10.0.0.1", 1000, "", ""},
                 PeerEndpoint{1, "b", "eth0", "10.0.0.2", 1001, "", ""}};
  m.cells = {{PeerCell{}, PeerCell{false, ECONNREFUSED, 1, Layer::transport, "refused"}}, {PeerCell{true}, PeerCell{}}};
  NetReport r = diagnose({}, facts, env_of({}), NetOptions{}, m);
  ASSERT_TRUE(r.peers);
  EXPECT_EQ(r.verdict.status, Status::broken);
  EXPECT_EQ(r.verdict.target, "peers 0 -> 1");
  EXPECT_EQ(r.note, "");
  r = diagnose({}, facts, env_of({}), NetOptions{});
  EXPECT_EQ(r.verdict.status, Status::ok);
  EXPECT_NE(r.note, "");
}

}  // namespace
}  // namespace coldstart::net
