// The net tests' sample documents, one copy for every test file: a doctor net report whose verdict is a proxy that
// nothing listens on, a peer matrix of three ranks on two hosts with two failing pairs, and a handmade network (every
// probe answered by hand) with the outcomes the lab's probes recorded.
#pragma once
#include <cerrno>

#include "net/diagnose.h"
#include "net/peers.h"
#include "net/target.h"
#include "net/target_check.h"

namespace coldstart::net::test {

inline NetReport sample_report() {
  NetReport r;
  r.host = "wslhost";
  r.facts.hostname = "wslhost";
  r.facts.context.netns = "net:[1]";
  r.facts.context.interfaces = {Interface{"lo", 1, true, true, {"127.0.0.1"}, {}}};
  r.proxy_env = {{"https_proxy", "http://127.0.0.1:7890"}};
  r.process = {Check{Layer::context, Status::ok, "the host's network namespace", {"network namespace net:[1]"}, ""},
               Check{Layer::platform, Status::ok, "Linux", {}, ""}};
  TargetReport t;
  t.target = parse_target("https://inet.test/");
  t.path = "proxy http://127.0.0.1:7890 (https_proxy, curl's rules)";
  t.layers = {
      Check{Layer::resolve, Status::ok, "an address", {}, ""},
      Check{Layer::proxy, Status::broken, "nothing listens on the proxy", {"connect: ECONNREFUSED"}, "start it"},
      Check{Layer::transport, Status::not_checked, "see proxy", {}, ""}};
  r.targets = {t};
  r.verdict = decide_verdict(r);
  return r;
}

// Three ranks on two hosts: rank 2's path is dropped from rank 0 and refused from rank 1; rank 1 has a problem.
inline PeerMatrix sample_peers() {
  PeerMatrix m;
  m.world = 3;
  m.endpoints = {{0, "node1", "eth0", "10.0.0.1", 41000, ""},
                 {1, "node1", "eth0", "10.0.0.1", 41001, ""},
                 {2, "node2", "ens5", "10.0.0.2", 41002, "a note", "a caveat"}};
  m.cells.assign(3, std::vector<PeerCell>(3));
  for (int f = 0; f < 3; ++f)
    for (int t = 0; t < 3; ++t)
      if (f != t) m.cells[static_cast<size_t>(f)][static_cast<size_t>(t)] = {true, 0, 0.3 + f, Layer::transport, ""};
  m.cells[0][2] = {false, ETIMEDOUT, 1000.2, Layer::forward, "ETIMEDOUT after 1.0 s: dropped beyond the first hop"};
  m.cells[1][2] = {false, ECONNREFUSED, 0.1, Layer::transport, "ECONNREFUSED: nothing listening"};
  return m;
}

// The sample's ranks with Gloo's choice: the same as NCCL's on rank 0, on loopback on rank 1, none on rank 2.
inline PeerMatrix sample_peers_with_gloo() {
  PeerMatrix m = sample_peers();
  m.endpoints[0].gloo_interface = "eth0";
  m.endpoints[0].gloo_address = "10.0.0.1";
  m.endpoints[1].gloo_interface = "lo";
  m.endpoints[1].gloo_address = "127.0.1.1";
  m.endpoints[1].gloo_problem = "a loopback address";
  m.endpoints[2].gloo_problem = "no interface named 'ib0'";
  return m;
}

// Through a proxy: the connection to it as `connect` answers its port, then a tunnel (200); asked nothing (host ""),
// no word.
inline decltype(Probes::tunnel) tunnel_over(decltype(Probes::connect) connect) {
  return [connect](const std::string& a, uint16_t p, const std::string& host, uint16_t, double t) {
    Tunnel tunnel{connect(a, p, t)};
    if (tunnel.to_proxy.ok && host.empty()) {
      tunnel.error = "the proxy sent no answer before a request within 0.5 s";
    } else if (tunnel.to_proxy.ok) {
      tunnel.status = 200;
      tunnel.status_line = "HTTP/1.1 200 Connection established";
    }
    return tunnel;
  };
}

// A network loopback cannot be: every probe answered by hand. The route leaves by eth0 via 10.0.0.1, whose ARP
// answers; the connect returns `outcome`; a name resolves to `answer`.
inline NetOptions handmade(Connect outcome, std::string answer = "203.0.113.10") {
  NetOptions o;
  o.probes.resolve = [answer](const std::string&, double, Lookup) { return Resolution{{answer}}; };
  o.probes.route = [](const std::string&) {
    Route r;
    r.type = "unicast";
    r.dev = "eth0";
    r.ifindex = 2;
    r.gateway = "10.0.0.1";
    r.src = "10.0.0.2";
    return r;
  };
  o.probes.neighbour = [](const std::string&, int) {
    Neighbour n;
    n.found = true;
    n.state = "REACHABLE";
    n.lladdr = "aa:bb:cc:dd:ee:ff";
    return n;
  };
  o.probes.connect = [outcome](const std::string&, uint16_t, double) { return outcome; };
  o.probes.tunnel = tunnel_over(o.probes.connect);
  return o;
}

inline Connect connected() { return Connect{true, 0, false, 0.4, "10.0.0.2:40000"}; }
inline Connect failed(int err) { return Connect{false, err, false, 20, ""}; }

// The same network, where `port` answers `outcome` and the other ports as before.
inline NetOptions answering_on(NetOptions o, uint16_t port, Connect outcome) {
  auto before = o.probes.connect;
  o.probes.connect = [before, port, outcome](const std::string& a, uint16_t p, double t) {
    return p == port ? outcome : before(a, p, t);
  };
  o.probes.tunnel = tunnel_over(o.probes.connect);
  return o;
}

// Outcomes the lab's probes recorded (tests/net/test_right_fix.py): no answer at all, an ICMP error and who sent it,
// and a timeout whose SYN retransmissions never left this host (TCP_INFO: tried, none in flight).
inline Connect timed_out() { return Connect{false, ETIMEDOUT, true, 2002, ""}; }
inline Connect icmp_error(int err, int type, int code, std::string from) {
  Connect c = failed(err);
  c.icmp = IcmpReport{true, false, false, type, code, err, std::move(from)};
  return c;
}
inline Connect dropped_here() {
  Connect c = timed_out();
  c.syn_retries = 1;
  c.retries_in_flight = 0;
  return c;
}

}  // namespace coldstart::net::test
