// One target's check: who would proxy it (decide_path), the probes (a TCP connection to the endpoint, and another
// client's proxy path beside it) and check_target, the pipeline that runs the layers in order (target_check_path.cc,
// target_check_endpoint.cc) and is the only writer of their findings.
#include "net/target_check.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "coord/address.h"
#include "net/probe.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

// The client whose rules decide this target's path: libcurl for URLs (it makes the service check), gRPC for
// grpc://, Ray's gRPC for RAY_ADDRESS; none for a plain HOST:PORT (TCPStore, NCCL and Gloo connect directly).
std::optional<Client> deciding_client(const Target& target) {
  if (is_proxy_endpoint(target)) return std::nullopt;  // a proxy's own endpoint
  if (target.scheme == "grpc") return target.origin == "RAY_ADDRESS" ? Client::ray : Client::grpc;
  if (target.url()) return Client::curl;
  return std::nullopt;
}

// The report with the layers after its last one, each not checked for the same reason.
TargetReport with_rest_not_checked(TargetReport report, const std::string& why) {
  bool after = false;
  for (Layer l : kLayers) {
    if (after) report.layers.push_back(make_check(l, Status::not_checked, why));
    after |= l == report.layers.back().layer;
  }
  return report;
}

// Other ports of the endpoint's host, asked where its port gets no answer. A thread waits half the timeout for the
// connection to end; only a connection still unanswered by then makes it ask, so that a dead path is answered in about
// one timeout, and a healthy one costs no packet to another port.
class OtherPorts {
 public:
  OtherPorts(const TargetInputs& in, std::string address, uint16_t port)
      : in_(in), address_(std::move(address)), port_(port) {
    try {
      thread_ = std::thread([this] { wait_then_ask(); });
    } catch (const std::system_error&) {  // no thread to be had: asked after the connection instead, if at all
    }
  }
  OtherPorts(const OtherPorts&) = delete;
  OtherPorts& operator=(const OtherPorts&) = delete;
  ~OtherPorts() { end(); }

  // The connection ended: its outcome decides whether the answers are wanted.
  std::vector<PortProbe> take(const Connect& connection) {
    end();
    const bool wanted = connection.timed_out && !connection.dropped_here();
    if (!wanted) return {};
    if (!asked_) ask(in_.options.timeout_s / 2);  // it ended before the thread asked (a handmade probe): ask now
    return std::move(answers_);
  }

 private:
  void end() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void wait_then_ask() {
    const double half = in_.options.timeout_s / 2;
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(half), [this] { return done_; })) return;
    }
    ask(half);
  }
  void ask(double timeout_s) {
    asked_ = true;
    std::vector<uint16_t> ports;
    for (uint16_t p : kOtherPorts)
      if (p != port_) ports.push_back(p);
    if (in_.options.probes.connect) {
      for (uint16_t p : ports) answers_.push_back({p, in_.options.probes.connect(address_, p, timeout_s)});
      return;
    }
    std::vector<std::future<Connect>> pending;
    for (uint16_t p : ports) {
      auto one = [a = address_, p, timeout_s] { return tcp_connect(a, p, timeout_s); };
      try {
        pending.push_back(std::async(std::launch::async, one));
      } catch (const std::system_error&) {
        pending.push_back(std::async(std::launch::deferred, one));
      }
    }
    for (size_t i = 0; i < ports.size(); ++i) answers_.push_back({ports[i], pending[i].get()});
  }

  const TargetInputs& in_;
  const std::string address_;
  const uint16_t port_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool asked_ = false;  // written by the thread before it ends, read after the join
  std::vector<PortProbe> answers_;
  std::thread thread_;
};

// The refusing proxy asked again (ProxyRecheck's order): each step only where the one before left it open.
ProxyRecheck recheck_proxy(const TargetInputs& in, const std::string& address, uint16_t port) {
  const double timeout = in.options.timeout_s;
  auto ask = [&](const std::string& host, uint16_t to) {  // host "": the greeting
    if (in.options.probes.tunnel) return in.options.probes.tunnel(address, port, host, to, timeout);
    return host.empty() ? proxy_greeting(address, port, std::min(kGreetingWaitS, timeout / 2), timeout)
                        : http_connect(address, port, host, to, timeout);
  };
  ProxyRecheck r;
  r.greeting = ask("", 0);
  if (r.greeting->refused()) return r;
  if (in.target.port != 443) {
    r.https_port = ask(in.target.host, 443);
    if (r.https_port->to_proxy.ok && r.https_port->status != 0 && !r.https_port->refused()) return r;
  }
  r.nowhere = ask(kNowhereHost, 443);
  return r;
}

// What a warning at resolve says about the address, where it explains the first broken layer after it: the note for
// that layer's summary and the fix that replaces its own; nullopt where it explains nothing.
struct Cause {
  std::string note, fix;
};
std::optional<Cause> resolve_cause(const Check& resolve, const Check& broken, const TargetFindings& found) {
  const std::string& address = found.address;
  const Route& route = found.route;
  const bool on_the_way = broken.layer == Layer::route || broken.layer == Layer::next_hop ||
                          broken.layer == Layer::forward || broken.layer == Layer::transport;
  // A fake IP with no route, or leaving by a gateway: no TUN device of the proxy tool takes it.
  if (is_fake_ip_address(address) && on_the_way && (!route.ok() || !route.gateway.empty()))
    return Cause{
        address + " is not the host's address but a fake IP handed out by a proxy tool's DNS (see resolve), " +
            (route.ok() ? "and it leaves by the gateway " + route.gateway : std::string("and no route leads to it")) +
            ": the tool's TUN device, which alone routes it, is not there",
        "the name resolves through a proxy tool in fake-IP mode that is not running (or whose TUN mode is "
        "off): start it, or have the name resolved by a real resolver (remove the tool's DNS from "
        "/etc/resolv.conf, or add the name to its fake-ip-filter); then run again"};
  // A name on loopback, refused: the connection went to this host, not to the name's.
  if (is_loopback_address(address) && broken.layer == Layer::transport && found.probe.connection.err == ECONNREFUSED &&
      !found.path.via)
    return Cause{"the name resolves to " + address +
                     ", a loopback address (see resolve): the connection went to this "
                     "host, not to the name's",
                 resolve.fix};
  return std::nullopt;
}

// A warning at resolve that explains a later failure is said where the failure is, and its fix is the name's.
TargetReport with_resolve_cause(TargetReport report, const TargetFindings& found) {
  if (report.layers.empty() || report.layers.front().layer != Layer::resolve ||
      report.layers.front().status != Status::warn)
    return report;
  for (Check& c : report.layers) {
    if (c.status != Status::broken) continue;
    if (auto cause = resolve_cause(report.layers.front(), c, found)) {
      c.summary += "; " + cause->note;
      c.evidence.push_back("resolve: " + report.layers.front().summary);
      c.fix = cause->fix;
    }
    break;
  }
  return report;
}

}  // namespace

bool answered_by(const Connect& c, const std::string& address) {
  if (c.ok) return true;
  if (c.icmp.present) return !c.icmp.local && c.icmp.from == address;
  return c.err == ECONNREFUSED;  // a reset
}

const PortProbe* ProbeOutcome::host_answer(const std::string& address) const {
  for (const PortProbe& p : other_ports)
    if (answered_by(p.connection, address)) return &p;
  return nullptr;
}

std::string ProbeOutcome::other_ports_line(const std::string& address) const {
  std::vector<std::string> parts;
  for (const PortProbe& p : other_ports)
    parts.push_back(std::to_string(p.port) + " " +
                    (p.connection.ok ? std::string("connected") : p.connection.describe()));
  return "other ports of " + address + ": " + join(parts, "; ");
}

bool is_this_host(const Route& route) { return route.type == "local"; }

bool is_proxy_endpoint(const Target& target) { return target.origin.find("proxy") != std::string::npos; }

Check make_check(Layer layer, Status status, std::string summary, std::vector<std::string> evidence, std::string fix) {
  return Check{layer, status, std::move(summary), std::move(evidence), std::move(fix)};
}

ProxyPath decide_path(const Target& target, const ProxyEnv& proxies) {
  ProxyPath path;
  for (Client c : kClients) path.decisions.push_back(decide(c, proxies, target));
  path.deciding_client = deciding_client(target);
  if (path.deciding_client)
    for (const ProxyDecision& d : path.decisions)
      if (d.client == *path.deciding_client && d.proxied && d.proxy) path.via = d;
  if (!path.via && !is_proxy_endpoint(target))
    for (const ProxyDecision& d : path.decisions)
      if (d.proxied && d.proxy && !path.other) path.other = d;
  path.endpoint_host = path.via ? path.via->proxy->host : target.host;
  path.endpoint_port = path.via ? path.via->proxy->port : target.port;
  path.endpoint_text = coord::host_port(path.endpoint_host, path.endpoint_port);
  path.endpoint_words = path.via ? "the proxy " + path.endpoint_text : target.host;
  return path;
}

std::string no_proxy_fix(const std::string& host) {
  return "exclude it from the proxy: export no_proxy=\"$no_proxy," + host + "\" NO_PROXY=\"$NO_PROXY," + host +
         "\" (every client reads one of the two spellings)";
}

std::string path_text(const ProxyPath& path) {
  if (!path.via) return "direct";
  return "proxy " + path.via->proxy->text() + " (" + path.via->variable + ", " + std::string(name(path.via->client)) +
         "'s rules)";
}

std::future<std::optional<Tunnel>> start_other_path_probe(const TargetInputs& in, const ProxyPath& path) {
  if (!path.other) return {};
  auto tunnel_through = [host = in.target.host, port = in.target.port, proxy = *path.other->proxy,
                         timeout = in.options.timeout_s, probes = in.options.probes]() -> std::optional<Tunnel> {
    Resolution pr = is_numeric_address(proxy.host) ? Resolution{{proxy.host}}
                    : probes.resolve               ? probes.resolve(proxy.host, timeout, Lookup::configured)
                                                   : resolve_host(proxy.host, timeout);
    if (pr.addresses.empty()) return std::nullopt;
    return probes.tunnel ? probes.tunnel(pr.addresses.front(), proxy.port, host, port, timeout)
                         : http_connect(pr.addresses.front(), proxy.port, host, port, timeout);
  };
  try {
    return std::async(std::launch::async, tunnel_through);
  } catch (const std::system_error&) {  // no thread to be had (an address-space limit): after the probe instead
    return std::async(std::launch::deferred, tunnel_through);
  }
}

ProbeOutcome probe_endpoint(const TargetInputs& in, const ProxyPath& path, const std::string& address) {
  ProbeOutcome out;
  const double timeout = in.options.timeout_s;
  OtherPorts others(in, address, path.endpoint_port);
  if (path.via) {
    out.tunnel = in.options.probes.tunnel
                     ? in.options.probes.tunnel(address, path.endpoint_port, in.target.host, in.target.port, timeout)
                     : http_connect(address, path.endpoint_port, in.target.host, in.target.port, timeout);
    out.connection = out.tunnel.to_proxy;
  } else {
    out.connection = in.options.probes.connect ? in.options.probes.connect(address, path.endpoint_port, timeout)
                                               : tcp_connect(address, path.endpoint_port, timeout);
  }
  out.other_ports = others.take(out.connection);
  if (path.via && out.tunnel.refused()) out.recheck = recheck_proxy(in, address, path.endpoint_port);
  out.connect_line = "connect(" + coord::host_port(address, path.endpoint_port) + "): " + out.connection.describe();
  return out;
}

// The pipeline: each layer in order, its Check into the report and what it found into the findings, which only this
// function writes. A target that does not resolve, or has no route, ends there.
TargetReport check_target(const Target& target, const HostFacts& facts, const ProxyEnv& proxies, const IfChoice& nccl,
                          const IfChoice& gloo, const NetOptions& options) {
  const TargetInputs in{target, facts, proxies, nccl, gloo, options};
  TargetFindings found;
  found.path = decide_path(target, proxies);
  TargetReport report{target, path_text(found.path), {}};
  ResolveLayer resolve = check_resolve(in, found.path);
  report.layers.push_back(resolve.check);
  found.address = resolve.address;
  if (found.address.empty())
    return with_rest_not_checked(std::move(report), "not checked: " + found.path.endpoint_words + " did not resolve");
  RouteLayer route = check_route(in, found.address);
  found.route = route.route;
  if (!found.route.ok()) {
    report.layers.push_back(route.check);
    return with_resolve_cause(with_rest_not_checked(std::move(report), "not checked: no route"), found);
  }
  std::future<std::optional<Tunnel>> other_path = start_other_path_probe(in, found.path);
  found.probe = probe_endpoint(in, found.path, found.address);
  NextHopLayer next_hop = check_next_hop(in, found);
  found.neighbour = next_hop.neighbour;
  found.blame = place_blame(found, next_hop.check);
  // The route, found before the probe, is what the probe's ENETUNREACH breaks.
  report.layers.push_back(found.blame == Layer::route ? blame_route(route.check, in, found) : route.check);
  report.layers.push_back(confirm_next_hop(next_hop.check, found.blame));
  report.layers.push_back(check_forward(in, found));
  if (other_path.valid()) found.other_tunnel = other_path.get();
  ProxyLayer proxy = check_proxy(in, found);
  found.blame = proxy.blame;
  report.layers.push_back(proxy.check);
  report.layers.push_back(check_transport(in, found));
  ServiceLayer service = check_service(in, found);
  if (service.black_hole()) {  // the path's, not the service's: the layer it breaks takes it
    const Check path = mtu_black_hole(in, found, service);
    for (Check& c : report.layers)
      if (c.layer == path.layer) c = path;
    service.check =
        make_check(Layer::service, Status::not_checked,
                   "not checked: its answer arrives in small packets only (see " + std::string(name(path.layer)) + ")",
                   service.check.evidence);
  }
  report.layers.push_back(service.check);
  return with_resolve_cause(std::move(report), found);
}

}  // namespace coldstart::net
