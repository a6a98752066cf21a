// The net tests' sample documents, one copy for every test file: a doctor net report whose verdict is a proxy that
// nothing listens on, and a peer matrix of three ranks on two hosts with two failing pairs.
#pragma once
#include <cerrno>

#include "net/diagnose.h"
#include "net/peers.h"
#include "net/target.h"

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

}  // namespace coldstart::net::test
