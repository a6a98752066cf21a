// doctor net's method: for each target, the layers inside out, each checked by its own probe or fact, a failed
// connection attributed to the one layer its evidence points at, and the verdict: the first broken layer (else the
// first warning), its evidence and its fix. Probes are live; the facts they are read against come in (HostFacts from a
// Root, the environment through GetEnv), so that WSL's facts can be a recorded fixture while the network is real.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/net.h"
#include "net/host.h"
#include "net/ifselect.h"
#include "net/layers.h"
#include "net/netlink.h"
#include "net/peers.h"
#include "net/probe.h"
#include "net/proxy.h"
#include "net/target.h"

namespace coldstart::net {

// The live probes a target's check makes, each replaceable where a test needs an outcome that loopback cannot give (a
// router beyond the gateway answering ENETUNREACH, a proxy's fake-IP answer); an empty one is the live one
// (resolve_host, route_to, neighbour, tcp_connect for a direct connection, http_connect through a proxy; `tunnel` with
// an empty host stands for proxy_greeting, a connection to the proxy that asks nothing; http_fetch for the service).
struct Probes {
  std::function<Resolution(const std::string& host, double timeout_s, Lookup how)> resolve;
  std::function<Route(const std::string& address)> route;
  std::function<Neighbour(const std::string& address, int ifindex)> neighbour;
  std::function<Connect(const std::string& address, uint16_t port, double timeout_s)> connect;
  std::function<Tunnel(const std::string& proxy_address, uint16_t proxy_port, const std::string& host, uint16_t port,
                       double timeout_s)>
      tunnel;
  std::function<Fetch(const std::string& url, double timeout_s, int mss)> fetch;  // http_fetch, curl's own proxy
};

struct NetOptions {
  double timeout_s = 2;  // each probe's bound
  std::string ca_file;   // --cacert: the CA the TLS check trusts ("" = the system's)
  // --peers runs before the job: nothing need listen at MASTER_ADDR:MASTER_PORT yet (the job's rank 0 opens its store
  // there, torchrun's agent already has), so a refusal there is its host answering, not a fault.
  bool before_job = false;
  Probes probes;
};

// The process's own layers (context, platform) from its facts.
std::vector<Check> check_process(const HostFacts& facts);
// One target's layers, probing the network.
TargetReport check_target(const Target& t, const HostFacts& facts, const ProxyEnv& proxies, const IfChoice& nccl,
                          const IfChoice& gloo, const NetOptions& opts);
// The first broken layer (process first, then each target in order, then a failing peer pair), else the first warning
// (then a rank whose Gloo would listen elsewhere than the matrix probed, or finds no interface), else ok.
Verdict decide_verdict(const NetReport& r);

// How many targets diagnose checks at once (threads, this one among them): a dead network answers in about one timeout
// for each this many targets.
inline constexpr size_t kMaxTargetWorkers = 16;

// The report and its one verdict: the process's layers, each target's (on a bounded pool of threads), and under --peers
// the matrix the ranks measured (run_peers, before any target is probed so that no rank waits on another's probes).
// Refuses an environment value holding a control character (check_environment) before anything is probed.
NetReport diagnose(const std::vector<Target>& targets, const HostFacts& facts, const GetEnv& env,
                   const NetOptions& opts, std::optional<PeerMatrix> peers = std::nullopt);

}  // namespace coldstart::net
