// The layers of a target's network path, each a function of the target's inputs and of what the layers before it
// found (target_check.h): resolve (the endpoint's name), route (the kernel's, and NCCL's, Gloo's and Ray's choices
// against it), next_hop (the neighbour entry after the probe), where a failed connection is blamed, and forward (what
// lies beyond the gateway).
#include <algorithm>
#include <cerrno>

#include "coord/address.h"
#include "net/netlink.h"
#include "net/probe.h"
#include "net/target_check.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

// The resolver's answer for a name, as the resolve layer's check.
Check resolved_name_check(const TargetInputs& in, const std::string& name, const Resolution& res,
                          std::vector<std::string> evidence) {
  const Target& target = in.target;
  const double timeout = in.options.timeout_s;
  if (res.timed_out)
    return make_check(Layer::resolve, Status::broken,
                      name + " did not resolve: no answer within " + format_seconds(timeout), evidence,
                      "the resolver does not answer: check that its nameserver is reachable (on WSL: the generated "
                      "resolv.conf, or dnsTunneling=true in .wslconfig), or give an address instead of the name");
  if (res.gai_error != 0 || res.addresses.empty()) {
    evidence.push_back("getaddrinfo: " + res.error);
    return make_check(Layer::resolve, Status::broken, name + " does not resolve (" + res.error + ")", evidence,
                      "check the name, or add it to /etc/hosts, or give an address");
  }
  const std::string& address = res.addresses.front();
  evidence.insert(evidence.begin(), name + " -> " + join(res.addresses, ", ") + " in " + format_ms(res.ms) + " ms");
  const bool loopback_name = name == "localhost" || name.ends_with(".localhost");
  if (is_loopback_address(address) && !loopback_name) {
    const bool fatal = target.rendezvous();
    return make_check(Layer::resolve, fatal ? Status::broken : Status::warn,
                      name + " resolves to " + address + ", a loopback address" +
                          (fatal ? ": every rank told this address reaches itself, not " + target.origin + "'s host"
                                 : ": only this host answers there"),
                      evidence,
                      "set " + (target.rendezvous() ? target.origin : std::string("the target")) +
                          " to an address the other hosts reach (this host's on its network), or change /etc/hosts' "
                          "loopback line for " +
                          name + " (Debian's 127.0.1.1 HOSTNAME)");
  }
  if (is_fake_ip_address(address))
    return make_check(Layer::resolve, Status::warn,
                      name + " resolves to " + address + ", in a proxy's fake-IP range (198.18.0.0/15)", evidence,
                      "a proxy in TUN/fake-IP mode answers DNS: connections work only while it runs and routes them; "
                      "exclude this name from fake-IP (fake-ip-filter) for a job's own hosts");
  return make_check(Layer::resolve, Status::ok, name + " -> " + join(res.addresses, ", "), evidence);
}

// NCCL's and Gloo's interface choices, as the route layer's evidence for a rendezvous.
std::vector<std::string> interface_choices(const TargetInputs& in) {
  std::vector<std::string> lines;
  if (!in.target.rendezvous()) return lines;
  for (const IfChoice* choice : {&in.nccl, &in.gloo}) {
    std::string line =
        choice->tool + " would use " + (choice->interfaces.empty() ? "no interface" : join(choice->interfaces, ", "));
    if (!choice->variable.empty()) line += " (" + choice->variable + ")";
    if (!choice->rule.empty()) line += ": " + choice->rule;
    lines.push_back(line);
  }
  return lines;
}

// A rendezvous' route against NCCL's and Gloo's choice: each tool that would not leave by the route's interface is a
// warning, with the variable that sends it there.
Check with_interfaces_off_route(Check route_check, const TargetInputs& in, const Route& route) {
  std::vector<std::string> sets;  // NCCL_SOCKET_IFNAME=DEV, GLOO_SOCKET_IFNAME=DEV: one per tool that is off
  for (const IfChoice* choice : {&in.nccl, &in.gloo}) {
    std::string off;  // why this tool would not leave by the route's interface
    if (!choice->problem.empty())
      off = choice->tool + ": " + choice->problem;
    else if (!choice->interfaces.empty() && choice->interfaces.front() != route.dev)
      off = choice->tool + " would use " + choice->interfaces.front() + ", not " + route.dev;
    if (off.empty()) continue;
    route_check.status = Status::warn;
    route_check.summary += "; " + off;
    sets.push_back(std::string(choice->tool == "NCCL" ? "NCCL_SOCKET_IFNAME" : "GLOO_SOCKET_IFNAME") + "=" + route.dev);
  }
  if (!sets.empty())
    route_check.fix = "set " + join(sets, " and ") + " (the interface of the route to " + in.target.origin + ")";
  return route_check;
}

// Ray's node-IP discovery (a UDP socket toward 8.8.8.8:53), as the route layer's evidence for RAY_ADDRESS.
Check with_ray_node_ip(Check route_check, const Route& route) {
  UdpSource ray = udp_source_toward("8.8.8.8", 53);
  if (ray.err != 0) {
    route_check.status = route_check.status == Status::ok ? Status::warn : route_check.status;
    route_check.evidence.push_back("Ray's node-IP discovery (a UDP socket toward 8.8.8.8:53): " + errno_name(ray.err));
    if (route_check.fix.empty())
      route_check.fix = "Ray cannot find its node IP here: give ray start --node-ip-address=" + route.src;
  } else {
    route_check.evidence.push_back("Ray's node IP (UDP toward 8.8.8.8:53, no packet sent): " + ray.address);
  }
  return route_check;
}

// ---- a rendezvous name as PyTorch's c10d asks it ------------------------------------------------------------------
// TCPStore's client (torch/csrc/distributed/c10d/socket.cpp, SocketConnectOp) connects to MASTER_ADDR directly and
// tries getaddrinfo's addresses in order. By default it first asks for IPv6 with IPv4 mapped (AF_INET6, AI_V4MAPPED |
// AI_ALL), and a failure of that lookup is retried until the store's timeout without ever asking for IPv4 (its
// "The IPv6 network addresses of (HOST, PORT) cannot be retrieved" over and over: pytorch/pytorch#121807, #131691).

// MASTER_ADDR, or a HOST:PORT given as an argument (what TCPStore, NCCL and Gloo reach directly), without a proxy.
bool asked_as_c10d(const Target& target, const ProxyPath& path) {
  return !path.via && (target.origin == "MASTER_ADDR" || (target.origin == "argument" && !target.url()));
}

Resolution lookup(const TargetInputs& in, const std::string& host, Lookup how) {
  const double timeout = in.options.timeout_s;
  return in.options.probes.resolve ? in.options.probes.resolve(host, timeout, how) : resolve_host(host, timeout, how);
}

bool is_ipv6(const std::string& address) { return address.find(':') != std::string::npos; }

// The fix that gives c10d an address instead of the name: the variable where one names the target.
std::string use_address(const Target& target, const std::string& address) {
  return target.origin == "MASTER_ADDR" ? "set MASTER_ADDR=" + address : "give " + address + " instead of the name";
}

// Each address in getaddrinfo's order with the kernel's route to it (a route lookup: what a UDP connect() would
// find, nothing sent), as the resolve layer's evidence: "2001:db8::5 (IPv6): no route (ENETUNREACH)".
std::vector<std::pair<std::string, Route>> address_routes(const TargetInputs& in, const std::vector<std::string>& all) {
  std::vector<std::pair<std::string, Route>> out;
  for (const std::string& a : all)
    out.emplace_back(a, in.options.probes.route ? in.options.probes.route(a) : route_to(a));
  return out;
}

std::string route_line(const std::string& address, const Route& route) {
  const std::string head = address + (is_ipv6(address) ? " (IPv6): " : " (IPv4): ");
  if (route.ok()) return head + "a route, dev " + route.dev;
  return head + "no route (" + (route.error != 0 && route.type.empty() ? errno_name(route.error) : route.type) + ")";
}

// The first address IPv6 without a route while an IPv4 one has one: a warning, and the layers after it take the
// IPv4 address, the path the job can have.
ResolveLayer with_address_order(const TargetInputs& in, const std::string& host, const std::vector<std::string>& all,
                                ResolveLayer out) {
  const auto routes = address_routes(in, all);
  for (const auto& [address, route] : routes) out.check.evidence.push_back(route_line(address, route));
  if (routes.size() < 2 || !is_ipv6(routes.front().first) || routes.front().second.ok()) return out;
  auto v4 =
      std::find_if(routes.begin(), routes.end(), [](const auto& r) { return !is_ipv6(r.first) && r.second.ok(); });
  if (v4 == routes.end()) return out;
  const std::string& first = routes.front().first;
  out.check.status = Status::warn;
  out.check.summary = host + " resolves first to IPv6 " + first + ", which has no route here; IPv4 " + v4->first +
                      " has one: TCPStore (c10d) tries the addresses in this order, and a client that stops at the "
                      "first fails (pytorch/pytorch#121807)";
  out.check.evidence.push_back("the layers below check " + v4->first + ", the first address with a route");
  out.check.fix = use_address(in.target, v4->first) + " (the IPv4 address), or prefer IPv4 on this host in " +
                  "/etc/gai.conf (precedence ::ffff:0:0/96 100), or give it a route to " + first;
  out.address = v4->first;
  return out;
}

// c10d's first lookup (IPv6 with IPv4 mapped) failing where the name resolves: it never gets to IPv4.
ResolveLayer with_c10d_lookup(const TargetInputs& in, const std::string& host, ResolveLayer out) {
  const Resolution v6 = lookup(in, host, Lookup::ipv6_mapped);
  if (!v6.timed_out && v6.gai_error == 0 && !v6.addresses.empty()) return out;
  const std::string why = v6.error.empty() ? "no address" : v6.error;
  out.check.status = Status::broken;
  out.check.summary = host + " resolves, but not when asked for IPv6 with IPv4 mapped (" + why +
                      "), as TCPStore (c10d) asks first: it retries that lookup until its timeout and never asks for "
                      "IPv4 (\"The IPv6 network addresses of (" +
                      host + ", PORT) cannot be retrieved\"; pytorch/pytorch#121807)";
  out.check.evidence.push_back("getaddrinfo(" + host + ", AF_INET6, AI_V4MAPPED | AI_ALL): " + why);
  out.check.fix = use_address(in.target, out.address) + " (an address needs no lookup), or fix the resolver's " +
                  "IPv6 (AAAA) answers for " + host;
  return out;
}

// Who on the way says what, for an ICMP error from the gateway or a router beyond it: the summary's reason and the fix.
struct RouterSays {
  std::string why, fix;
};
RouterSays router_says(const TargetInputs& in, const TargetFindings& found, const std::string& who) {
  const std::string& address = found.address;
  const std::string port = std::to_string(found.path.endpoint_port);
  const std::string dst = coord::host_port(address, found.path.endpoint_port);
  switch (found.probe.connection.icmp.kind()) {
    case IcmpKind::prohibited:
    case IcmpKind::port_unreachable:
      return {who + " rejects the connection to " + dst + ": a firewall rule there (or a `prohibit` route)",
              "let TCP port " + port + " to " + address + " through " + who +
                  ": its forward rules (nft list ruleset, iptables -S FORWARD, firewall-cmd --list-all), or remove a "
                  "prohibit route there (ip route show table all | grep prohibit)"};
    case IcmpKind::host_unreachable:
      return {who + " cannot deliver to " + address + ": no ARP answer from it on " + who +
                  "'s network (it is down, or not at that address), or an `unreachable` route there",
              "check that " + address + " is up and on the network " + who + " reaches it by (on " + who +
                  ": ip neigh show " + address + ", ip route get " + address + ")"};
    case IcmpKind::ttl_exceeded:
      return {"the packets loop between routers: their hop limit ran out at " + who,
              "the routes toward " + address + " send it back and forth: run ip route get " + address + " on " + who +
                  " and on the routers after it"};
    default:
      return {who + " reports " + address + " unreachable",
              in.facts.platform.wsl ? "check Windows' routes, firewall and any VPN toward " + address
                                    : "check the routes and firewall rules toward " + address + " on " + who};
  }
}

// The forward layer when nothing, or a router's error, came back from beyond the gateway.
Check forward_failed(const TargetInputs& in, const TargetFindings& found) {
  const Route& route = found.route;
  const Connect& connection = found.probe.connection;
  std::vector<std::string> evidence = {
      found.probe.connect_line,
      "neighbour " + route.gateway + ": " + (found.neighbour.found ? found.neighbour.state : std::string("no entry"))};
  const Sender sender = icmp_sender(found);
  if (sender == Sender::gateway || sender == Sender::router) {
    const std::string who = sender == Sender::gateway
                                ? "the gateway " + route.gateway
                                : "the router " + connection.icmp.from + " beyond the gateway " + route.gateway;
    const RouterSays says = router_says(in, found, who);
    return make_check(Layer::forward, Status::broken, says.why + " (" + connection.icmp.describe() + ")", evidence,
                      says.fix);
  }
  if (connection.err == EHOSTUNREACH)
    return make_check(Layer::forward, Status::broken,
                      "a router beyond " + route.gateway + " reports " + found.address +
                          " unreachable (EHOSTUNREACH with the gateway answering ARP)",
                      evidence, "check the routes and firewalls toward " + found.address + " beyond " + route.gateway);
  if (!found.probe.other_ports.empty()) evidence.push_back(found.probe.other_ports_line(found.address));
  const std::string ports = found.probe.other_ports.empty() ? "" : " on any port asked";
  return make_check(
      Layer::forward, Status::broken,
      "the gateway " + route.gateway + " answers ARP, but nothing came back from " + found.address + ports +
          " within " + format_seconds(in.options.timeout_s) + ": dropped beyond the gateway",
      evidence,
      in.facts.platform.wsl
          ? "Windows does not forward WSL's traffic (its NAT for the WSL switch): restart WSL (wsl --shutdown); check "
            "a VPN or firewall on Windows, or try mirrored mode"
          : "the gateway " + route.gateway + " does not forward, or something after it drops everything to " +
                found.address +
                ": check its forwarding and NAT (sysctl net.ipv4.ip_forward, a masquerade rule for this network), "
                "its forward rules and a blackhole route there (ip route get " +
                found.address + " on it), then the firewalls further out; " + found.address + " may also be down");
}

// The host's default route when it has a gateway of the address's family (the facts name one default route).
const DefaultRoute* default_route_for(const HostFacts& facts, const std::string& address) {
  const DefaultRoute& def = facts.default_route;
  const bool v6 = address.find(':') != std::string::npos;
  if (def.gateway.empty() || (def.gateway.find(':') != std::string::npos) != v6) return nullptr;
  return &def;
}

// A route or rule of a rejecting type (unreachable, blackhole, prohibit, throw) answered the lookup: it is named, and
// removing it is the fix, whatever default route there is.
Check rejecting_route(const TargetInputs& in, const std::string& address, const Route& route,
                      std::vector<std::string> evidence) {
  const RejectEntry& entry = route.reject;
  const DefaultRoute* def = default_route_for(in.facts, address);
  const std::string kernel = route.error ? " (the kernel's lookup answers " + errno_name(route.error) + ")" : "";
  if (def)
    evidence.push_back("default route: via " + def->gateway + " dev " + def->dev +
                       " (/proc/net/route), which this entry overrides");
  if (entry.type.empty())
    return make_check(Layer::route, Status::broken,
                      "a " + route.type + " route or rule refuses " + address + kernel + ": packets are dropped here",
                      evidence,
                      "find and remove it: ip route show table all type " + route.type +
                          "; ip rule show (a rule of action " + route.type + ")");
  evidence.insert(evidence.begin(), (entry.text.starts_with("rule ") ? "ip rule: " : "ip route: ") + entry.text);
  return make_check(
      Layer::route, Status::broken,
      "the " + std::string(entry.text.starts_with("rule ") ? "rule" : "route") + " `" + entry.text + "` refuses " +
          address + kernel + (def ? ", before the default route" : "") + ": packets to it go nowhere",
      evidence,
      "remove it: " + entry.remove + " (and find what installs it: a VPN client, a network manager, a script at boot)");
}

}  // namespace

ResolveLayer check_resolve(const TargetInputs& in, const ProxyPath& path) {
  const Target& target = in.target;
  const std::string& host = path.endpoint_host;
  if (is_numeric_address(host)) {
    if (target.rendezvous() && is_loopback_address(host))
      return {make_check(Layer::resolve, Status::warn,
                         target.origin + " is a loopback address (" + host + "): only ranks on this host reach it",
                         {target.origin + "=" + target.host},
                         "for a job across hosts set " + target.origin + " to an address the other hosts reach"),
              host};
    return {make_check(Layer::resolve, Status::ok, host + " is an address: nothing to resolve"), host};
  }
  const bool c10d = asked_as_c10d(target, path);
  const Resolution res = lookup(in, host, c10d ? Lookup::any_family : Lookup::configured);
  std::vector<std::string> evidence;
  for (const auto& [addr, name] : in.facts.hosts_file)
    if (name == host) evidence.push_back("/etc/hosts: " + addr + " " + name);
  const ResolverConf& resolver = in.facts.resolver;
  if (!resolver.nameservers.empty())
    evidence.push_back("resolver: nameserver " + join(resolver.nameservers, ", ") + " (/etc/resolv.conf" +
                       (resolver.wsl_generated ? ", generated by WSL)" : ")"));
  ResolveLayer out{resolved_name_check(in, host, res, std::move(evidence)), ""};
  if (!res.timed_out && res.gai_error == 0 && !res.addresses.empty()) out.address = res.addresses.front();
  if (c10d && out.check.status == Status::ok)
    out = with_c10d_lookup(in, host, with_address_order(in, host, res.addresses, out));
  if (path.via)
    out.check.summary = "the proxy " + out.check.summary + " (the proxy resolves " + target.host + " itself)";
  return out;
}

RouteLayer check_route(const TargetInputs& in, const std::string& address) {
  RouteLayer out;
  out.route = in.options.probes.route ? in.options.probes.route(address) : route_to(address);
  const Route& route = out.route;
  std::vector<std::string> evidence = interface_choices(in);
  if (!route.ok() && !route.type.empty()) {
    out.check = rejecting_route(in, address, route, std::move(evidence));
    return out;
  }
  if (route.error != 0) {
    if (const DefaultRoute* def = default_route_for(in.facts, address)) {  // and yet no route: a rule went elsewhere
      evidence.push_back("default route: via " + def->gateway + " dev " + def->dev + " (/proc/net/route)");
      out.check =
          make_check(Layer::route, Status::broken,
                     "no route to " + address + " (" + errno_name(route.error) +
                         "), though a default route exists: a policy rule sends this lookup to a table "
                         "without one",
                     evidence, "check the rules (ip rule show) and the table they name (ip route show table all)");
      return out;
    }
    out.check = make_check(Layer::route, Status::broken,
                           "no route to " + address + " (" + errno_name(route.error) + ")", evidence,
                           "add a route (a default route via the gateway: ip route add default via GATEWAY), or use an "
                           "address on a connected network");
    return out;
  }
  const std::string summary = is_this_host(route) ? address + " is this host (dev " + route.dev + ")"
                              : route.gateway.empty()
                                  ? address + " is on-link, dev " + route.dev + ", source " + route.src
                                  : "via gateway " + route.gateway + ", dev " + route.dev + ", source " + route.src;
  out.check = make_check(Layer::route, Status::ok, summary, evidence);
  if (in.target.rendezvous() && !is_this_host(route)) out.check = with_interfaces_off_route(out.check, in, route);
  if (in.target.origin == "RAY_ADDRESS") out.check = with_ray_node_ip(out.check, route);
  return out;
}

NextHopLayer check_next_hop(const TargetInputs& in, const TargetFindings& found) {
  const Route& route = found.route;
  if (is_this_host(route)) return {make_check(Layer::next_hop, Status::skipped, "this host: no next hop"), {}};
  const std::string hop = route.gateway.empty() ? found.address : route.gateway;
  const std::string hop_name = route.gateway.empty() ? found.address + " (on-link)" : "the gateway " + route.gateway;
  const Connect& connection = found.probe.connection;
  NextHopLayer out;
  out.neighbour =
      in.options.probes.neighbour ? in.options.probes.neighbour(hop, route.ifindex) : neighbour(hop, route.ifindex);
  const Neighbour& entry = out.neighbour;
  std::vector<std::string> evidence = {found.probe.connect_line};
  if (entry.found)
    evidence.push_back("neighbour " + hop + " dev " + route.dev + ": " + entry.state +
                       (entry.lladdr.empty() ? "" : " " + entry.lladdr));
  if (entry.found && !entry.resolved() && !connection.ok) {
    const std::string fix =
        in.facts.platform.wsl
            ? "WSL's virtual switch does not answer: restart WSL (wsl --shutdown) and check the Windows "
              "host's vEthernet (WSL) adapter; a VPN on Windows can take the route away"
            : "check the link to " + hop + " (ip neigh show " + hop + ", ip link show " + route.dev +
                  "): the host or its ARP is down";
    out.check = make_check(Layer::next_hop, Status::broken,
                           hop_name + " does not answer ARP: its neighbour entry is " + entry.state +
                               " (connect() reports this as EHOSTUNREACH, errno 113, after about 3 s)",
                           evidence, fix);
  } else if (entry.found && entry.resolved()) {
    out.check = make_check(Layer::next_hop, Status::ok,
                           hop_name + " answers (" + entry.state + ", " + entry.lladdr + ")", evidence);
  } else if (entry.found) {  // connected through it, though its entry has failed since
    out.check =
        make_check(Layer::next_hop, Status::warn,
                   "the connection went through " + hop_name + ", but its neighbour entry is " + entry.state +
                       " now: ARP answers stopped",
                   evidence, "check the link to " + hop + " (ip neigh show " + hop + "): its ARP answers come and go");
  } else if (connection.ok || connection.err == ECONNREFUSED) {
    out.check = make_check(Layer::next_hop, Status::ok,
                           hop_name + " passed the probe (no neighbour entry: a link without ARP)", evidence);
  } else {
    out.check = make_check(Layer::next_hop, Status::not_checked, "no neighbour entry for " + hop + " after the probe",
                           evidence);
  }
  return out;
}

Sender icmp_sender(const TargetFindings& found) {
  const IcmpReport& icmp = found.probe.connection.icmp;
  if (!icmp.present) return Sender::none;
  if (icmp.local || icmp.from == found.route.src) return Sender::this_host;
  if (icmp.from == found.address) return Sender::endpoint;
  if (!found.route.gateway.empty() && icmp.from == found.route.gateway) return Sender::gateway;
  return icmp.from.empty() ? Sender::none : Sender::router;
}

std::optional<Layer> place_blame(const TargetFindings& found, const Check& next_hop) {
  const Connect& connection = found.probe.connection;
  const Layer endpoint = found.path.via ? Layer::proxy : Layer::transport;  // the endpoint's own side
  const bool beyond = !found.route.gateway.empty();
  if (connection.ok) return std::nullopt;
  if (next_hop.status == Status::broken) return Layer::next_hop;
  if (connection.dropped_here()) return Layer::transport;  // nothing left this host
  if (connection.icmp.kind() == IcmpKind::no_route || connection.err == ENETUNREACH) return Layer::route;
  switch (icmp_sender(found)) {  // the ICMP error's sender names the place, whatever errno it became
    case Sender::this_host: return Layer::transport;
    case Sender::endpoint: return endpoint;
    case Sender::gateway:
    case Sender::router: return beyond ? Layer::forward : endpoint;
    case Sender::none: break;
  }
  if (connection.err == ECONNREFUSED) return endpoint;
  // The host answers on another port where this one got nothing: the way there works, and the port is dropped.
  if (connection.timed_out && found.probe.host_answer(found.address)) return endpoint;
  if ((connection.timed_out || connection.err == ETIMEDOUT || connection.err == EHOSTUNREACH) && beyond)
    return Layer::forward;
  if (connection.err == EPERM || connection.err == EACCES) return Layer::transport;
  return endpoint;
}

Check confirm_next_hop(Check next_hop, const std::optional<Layer>& blame) {
  if (next_hop.status == Status::not_checked && blame == Layer::forward) next_hop.status = Status::ok;  // ARP answered
  return next_hop;
}

// A router on the way (the gateway, or one beyond it) has no route toward the address and said so.
Check blame_route(Check route_check, const TargetInputs& in, const TargetFindings& found) {
  const Route& route = found.route;
  const std::string& address = found.address;
  const Sender sender = icmp_sender(found);
  const std::string& from = found.probe.connection.icmp.from;
  const std::string who = sender == Sender::gateway  ? "the gateway " + route.gateway
                          : sender == Sender::router ? "the router " + from + " beyond the gateway " + route.gateway
                          : route.gateway.empty()    ? "a router on the way"
                                                     : "the gateway " + route.gateway + " or a router beyond it";
  route_check.status = Status::broken;
  route_check.summary = "a route to " + address + " was found here (" + route_check.summary +
                        "), but connect() got ENETUNREACH: " + who + " reports no route to " + address;
  route_check.evidence.insert(route_check.evidence.begin(), found.probe.connect_line);
  const std::string router = sender == Sender::router ? from : route.gateway;
  if (!route.gateway.empty())
    route_check.fix = std::string(in.facts.platform.wsl && sender != Sender::router
                                      ? "Windows (WSL's gateway " + route.gateway + ") has no route to " + address +
                                            ": check Windows' own routes and a VPN that may have taken them"
                                      : "the network beyond " + route.gateway + " has no route to " + address +
                                            ": check the routes on " + router + " (ip route get " + address +
                                            " there)" + (sender == Sender::none ? " and the routers after it" : "")) +
                      ", or use an address that network reaches";
  else
    route_check.fix =
        "the route changed between the lookup and the connect, or a routing rule sends this socket elsewhere: "
        "check ip rule and ip route get " +
        address + ", then run again";
  return route_check;
}

Check check_forward(const TargetInputs& in, const TargetFindings& found) {
  const Route& route = found.route;
  const std::string& line = found.probe.connect_line;
  const Connect& connection = found.probe.connection;
  if (is_this_host(route) || route.gateway.empty())
    return make_check(Layer::forward, Status::skipped,
                      is_this_host(route) ? "this host" : "on-link: nothing beyond a gateway");
  if (found.blame == Layer::next_hop)
    return make_check(Layer::forward, Status::not_checked, "not checked: the gateway does not answer");
  if (found.blame == Layer::route)
    return make_check(Layer::forward, Status::not_checked,
                      "not checked: a router reports no route to " + found.address + " (see route)", {line});
  if (connection.dropped_here() || icmp_sender(found) == Sender::this_host)
    return make_check(Layer::forward, Status::not_checked, "not checked: nothing left this host (see transport)",
                      {line});
  if (found.blame == Layer::forward) return forward_failed(in, found);
  std::vector<std::string> evidence = {line};
  if (icmp_sender(found) == Sender::endpoint)
    evidence.push_back(found.address + " itself answered (" + connection.icmp.describe() + ")");
  else if (const PortProbe* other = found.probe.host_answer(found.address))
    evidence.push_back(found.address + " answers on port " + std::to_string(other->port) + " (" +
                       (other->connection.ok ? std::string("connected") : other->connection.describe()) +
                       ") through the same gateway");
  return make_check(Layer::forward, Status::ok, "answers come back from beyond " + route.gateway, evidence);
}

Check mtu_black_hole(const TargetInputs& in, const TargetFindings& found, const ServiceLayer& service) {
  const Route& route = found.route;
  const bool beyond = !route.gateway.empty();
  const std::string host = found.path.via ? "the proxy " + found.path.endpoint_text : found.address;
  const Fetch& small = *service.small;
  std::vector<std::string> evidence = {
      found.probe.connect_line,
      "the request in full-size packets: " + service.full.curl_error + " in " + format_ms(service.full.ms) + " ms",
      "the same in small packets (TCP MSS " + std::to_string(kSmallMss) + "): HTTP " +
          std::to_string(small.http_status) + " in " + format_ms(small.ms) + " ms"};
  const std::string summary =
      "full-size packets between here and " + host + " are lost" +
      (beyond ? " beyond the gateway " + route.gateway : " on the link") +
      ": the connection opens and the service answers in small packets, but not in full-size ones (a path MTU "
      "black hole: a smaller MTU on the way, and the ICMP \"fragmentation needed\" that would shrink them does not "
      "come back)";
  const std::string fix =
      beyond ? "let ICMP \"fragmentation needed\" (type 3 code 4; IPv6: packet too big) through the firewalls on the "
               "way, or clamp the TCP MSS on the router whose link is smaller (nft: tcp flags syn tcp option maxseg "
               "size set rt mtu; iptables -t mangle -A FORWARD -p tcp --tcp-flags SYN,RST SYN -j TCPMSS "
               "--clamp-mss-to-pmtu), or lower this interface's MTU to the path's (ip link set dev " +
                   route.dev + " mtu 1400)"
             : "the two ends of the link have different MTUs (jumbo frames on one side): set the same MTU on both (ip "
               "link show dev " +
                   route.dev + " here and on " + found.address + ")";
  return make_check(beyond ? Layer::forward : Layer::next_hop, Status::broken, summary, evidence,
                    fix + (in.facts.platform.wsl ? "; on WSL, a VPN on Windows is the usual smaller link" : ""));
}

}  // namespace coldstart::net
