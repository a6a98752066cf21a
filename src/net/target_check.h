// One target's check as a pipeline of layer functions, inside out. Each layer is a free function of what the check is
// given (TargetInputs: the target, this process's facts, the options) and of what the layers before it found
// (TargetFindings), and returns its Check with what it adds; check_target (diagnose.h) runs them in order and is the
// only place that writes the findings. A failed connection is put at the one layer its evidence names (place_blame).
// target_check.cc holds the path decision, the probes and the pipeline; target_check_path.cc the layers of the path
// (resolve, route, next_hop, forward) and the blame; target_check_endpoint.cc those at its end (proxy, transport,
// service); target_check_refusal.cc what a proxy that refuses the tunnel refuses.
#pragma once
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "net/diagnose.h"

namespace coldstart::net {

// What a target's check is given: the same for every layer, read only.
struct TargetInputs {
  const Target& target;
  const HostFacts& facts;
  const ProxyEnv& proxies;
  const IfChoice& nccl;
  const IfChoice& gloo;
  const NetOptions& options;
};

// Who would send the target through a proxy, decided before anything is probed, and so the endpoint connected to.
struct ProxyPath {
  std::vector<ProxyDecision> decisions;   // every client's, in kClients order (the proxy layer's evidence)
  std::optional<Client> deciding_client;  // curl for URLs, gRPC or Ray for grpc://; none for HOST:PORT or a proxy
  std::optional<ProxyDecision> via;       // the deciding client's decision, when it takes a proxy
  std::optional<ProxyDecision> other;     // another client's proxy, where the deciding client goes direct
  std::string endpoint_host;              // the target's host, or via's proxy's
  uint16_t endpoint_port = 0;
  std::string endpoint_text;   // endpoint_host:endpoint_port
  std::string endpoint_words;  // "the proxy HOST:PORT", or the target's host
};

// One connection to another port of the endpoint's host.
struct PortProbe {
  uint16_t port = 0;
  Connect connection;
};

// The ports asked where the endpoint's port gets no answer (the first of them a host's firewall most often lets in):
// an answer on any of them (a connection, a reset, or the host's own ICMP error) shows the way to the host works.
inline constexpr uint16_t kOtherPorts[] = {22, 443, 80};

// A name that never resolves (RFC 6761's .invalid): a proxy that refuses a CONNECT to it as it refused the target
// refuses this client (or every destination not on its list), whatever the target and port.
inline constexpr const char* kNowhereHost = "coldstart-check.invalid";

// Where the deciding client's proxy refused the tunnel (403, or a hang-up): the same proxy asked again, so that the
// client, the destination and the port can be told apart: first a connection that asks nothing (a refusal before any
// request is the client's), then the target's host on 443 (where its port is not), then a name that does not exist
// (where the host was refused too).
struct ProxyRecheck {
  std::optional<Tunnel> greeting;    // proxy_greeting: what the proxy says before a request
  std::optional<Tunnel> https_port;  // CONNECT the target's host on 443
  std::optional<Tunnel> nowhere;     // CONNECT kNowhereHost:443
};
// How long the greeting waits for a proxy's word before a request.
inline constexpr double kGreetingWaitS = 0.5;

// The probe: a TCP connection to the endpoint; through via's proxy, a CONNECT tunnel whose first leg it is.
struct ProbeOutcome {
  Connect connection;
  Tunnel tunnel;             // through via's proxy only
  ProxyRecheck recheck;      // through via's proxy, when it refused the tunnel
  std::string connect_line;  // "connect(ADDRESS:PORT): ...": the evidence of each layer that reads the connection
  // Where the connection timed out (and left this host): other ports of the same host, asked once the connection has
  // waited half the timeout. Empty when not asked.
  std::vector<PortProbe> other_ports;
  const PortProbe* host_answer(const std::string& address) const;  // the first other port its host answered on
  std::string other_ports_line(const std::string& address) const;  // "other ports of HOST: 22 ECONNREFUSED, ..."
};

// Whether `c` is an answer from the host at `address` itself: a connection, a reset, or an ICMP error it sent.
bool answered_by(const Connect& c, const std::string& address);

// What the layers found, in the order they find it.
struct TargetFindings {
  ProxyPath path;
  std::string address;  // the endpoint's, once resolved
  Route route;
  ProbeOutcome probe;
  Neighbour neighbour;         // the next hop's entry (none for this host)
  std::optional<Layer> blame;  // the one layer a failed connection (or tunnel) points at
  // The tunnel through path.other's proxy, once probed; nullopt when there is no other or its name did not resolve.
  std::optional<Tunnel> other_tunnel;
};

// The layers' own results: a Check and what the layer adds to the findings.
struct ResolveLayer {
  Check check;
  std::string address;  // "" when the endpoint did not resolve
};
struct RouteLayer {
  Check check;
  Route route;
};
struct NextHopLayer {
  Check check;
  Neighbour neighbour;
};
struct ProxyLayer {
  Check check;
  std::optional<Layer> blame;  // the findings' blame, or the proxy when its tunnel failed
};
// The service's answer, and where it stalled after the connection worked (a timeout, a receive failure), the same
// request in small packets (TCP MSS kSmallMss): answered so, full-size packets are lost on the way.
struct ServiceLayer {
  Check check;
  Fetch full;
  std::optional<Fetch> small;
  bool black_hole() const { return small && small->attempted && small->curl_code == 0 && small->http_status > 0; }
};
inline constexpr int kSmallMss = 536;  // IPv4's default MSS (RFC 879): segments of 576-byte packets

ProxyPath decide_path(const Target& target, const ProxyEnv& proxies);
std::string path_text(const ProxyPath& path);  // "direct", or "proxy URL (VARIABLE, CLIENT's rules)"
// The endpoint's name (the target's, or through a proxy the proxy's).
ResolveLayer check_resolve(const TargetInputs& in, const ProxyPath& path);
// The kernel's route to the address; for a rendezvous, NCCL's and Gloo's interface against it; for Ray, its node IP.
RouteLayer check_route(const TargetInputs& in, const std::string& address);
// Where the deciding client goes direct but another would take a proxy: the tunnel through that proxy, started now so
// that it runs beside the probe (an invalid future when there is no such path).
std::future<std::optional<Tunnel>> start_other_path_probe(const TargetInputs& in, const ProxyPath& path);
ProbeOutcome probe_endpoint(const TargetInputs& in, const ProxyPath& path, const std::string& address);
NextHopLayer check_next_hop(const TargetInputs& in, const TargetFindings& found);
// Who sent the ICMP error a failed connection got, as this path sees it: this host (its own firewall's reject), the
// gateway, a router beyond it, or the endpoint's host itself.
enum class Sender { none, this_host, gateway, router, endpoint };
Sender icmp_sender(const TargetFindings& found);
// Where a failed connection points (nullopt when it connected), from the next hop's check and the probe.
std::optional<Layer> place_blame(const TargetFindings& found, const Check& next_hop);
// The next hop once blame is placed: a drop beyond it means its ARP answered, so an unchecked next hop is ok.
Check confirm_next_hop(Check next_hop, const std::optional<Layer>& blame);
// ENETUNREACH from connect() although a route was found here: the route's check, found before the probe, is broken.
Check blame_route(Check route_check, const TargetInputs& in, const TargetFindings& found);
Check check_forward(const TargetInputs& in, const TargetFindings& found);
ProxyLayer check_proxy(const TargetInputs& in, const TargetFindings& found);
// The deciding client's proxy took the connection and refused the tunnel (403, or a hang-up): this client, the
// destination or the port, told apart by the recheck (target_check_refusal.cc).
Check proxy_refusal(const TargetInputs& in, const TargetFindings& found, std::vector<std::string> evidence);
std::string no_proxy_fix(const std::string& host);  // export no_proxy=...,HOST NO_PROXY=...,HOST
Check check_transport(const TargetInputs& in, const TargetFindings& found);
ServiceLayer check_service(const TargetInputs& in, const TargetFindings& found);
// A path MTU black hole, found by the service's small-packet request: the check of the layer it breaks (forward
// beyond a gateway, next_hop on-link), which replaces that layer's.
Check mtu_black_hole(const TargetInputs& in, const TargetFindings& found, const ServiceLayer& service);

Check make_check(Layer layer, Status status, std::string summary, std::vector<std::string> evidence = {},
                 std::string fix = "");
bool is_this_host(const Route& route);         // the route's type is local
bool is_proxy_endpoint(const Target& target);  // a proxy variable's own endpoint (its origin names the variable)

}  // namespace coldstart::net
