// The layers of one target, inside out: TargetCheck holds what the earlier layers found (the address, the route, the
// proxy in the way) and has one method per layer in the order they are checked, so a layer's verdict can name what
// the layers below it saw. It is one file of some 750 lines because that state is shared by every layer; the process's
// own layers (check_process) and the verdict across targets and peers follow it.
#include "net/diagnose.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <future>
#include <sstream>
#include <system_error>
#include <thread>

#include "net/netlink.h"
#include "net/probe.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

Check make(Layer l, Status s, std::string summary, std::vector<std::string> evidence = {}, std::string fix = "") {
  return Check{l, s, std::move(summary), std::move(evidence), std::move(fix)};
}

std::string host_port(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string interfaces_line(const std::vector<Interface>& ifs) {
  std::vector<std::string> parts;
  for (const Interface& i : ifs) {
    std::string addrs = join(i.ipv4, ", ");
    if (addrs.empty()) addrs = join(i.ipv6, ", ");
    parts.push_back(i.name + (i.up ? "" : " (down)") + (addrs.empty() ? "" : " " + addrs));
  }
  return parts.empty() ? "no interfaces" : join(parts, "; ");
}

bool wsl_nat(const HostFacts& f) {
  return f.platform.wsl && (f.platform.wsl_mode == "nat" || f.platform.wsl_mode.empty());
}

// The addresses a TCP socket listens on at `port`, from /proc/net/tcp and tcp6 (this namespace's).
std::vector<std::string> listeners(uint16_t port) {
  std::vector<std::string> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state;
      row >> slot >> local >> remote >> state;
      auto colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;
      if (std::stoul(local.substr(colon + 1), nullptr, 16) != port) continue;
      const std::string hex_addr = local.substr(0, colon);
      if (hex_addr == "0100007F")
        out.push_back("127.0.0.1");
      else if (hex_addr == "00000000")
        out.push_back("0.0.0.0");
      else if (hex_addr == "00000000000000000000000001000000")
        out.push_back("::1");
      else if (hex_addr == "00000000000000000000000000000000")
        out.push_back("::");
      else
        out.push_back("0x" + hex_addr);
    }
  }
  return out;
}

bool is_local_address(const HostFacts& f, const std::string& address) {
  for (const Interface& i : f.context.interfaces) {
    for (const auto& a : i.ipv4)
      if (a == address) return true;
    for (const auto& a : i.ipv6)
      if (a == address) return true;
  }
  return is_loopback_address(address);
}

std::string no_proxy_fix(const std::string& host) {
  return "exclude it from the proxy: export no_proxy=\"$no_proxy," + host + "\" NO_PROXY=\"$NO_PROXY," + host +
         "\" (every client reads one of the two spellings)";
}

std::string wsl_loopback_proxy_fix(const HostFacts& f, const ProxyEndpoint& p, const std::string& var) {
  const std::string host =
      f.platform.windows_host.empty() ? "<the Windows host: WSL's default gateway>" : f.platform.windows_host;
  return "WSL in NAT mode cannot reach Windows' loopback. Either point " + var + " at the Windows host (export " + var +
         "=http://" + host + ":" + std::to_string(p.port) + "), turn on the proxy's allow-LAN setting and allow port " +
         std::to_string(p.port) +
         " in Windows' firewall; or switch WSL to mirrored mode with autoProxy (%UserProfile%\\.wslconfig: [wsl2] "
         "networkingMode=mirrored, autoProxy=true; then wsl --shutdown)";
}

// The client whose rules decide this target's path: libcurl for URLs (it makes the service check), gRPC for
// grpc://, Ray's gRPC for RAY_ADDRESS; none for a plain HOST:PORT (TCPStore, NCCL and Gloo connect directly).
std::optional<Client> primary_client(const Target& t) {
  if (t.origin.find("proxy") != std::string::npos) return std::nullopt;  // a proxy's own endpoint
  if (t.scheme == "grpc") return t.origin == "RAY_ADDRESS" ? Client::ray : Client::grpc;
  if (t.url()) return Client::curl;
  return std::nullopt;
}

// One target's layers, inside out: each check reads what the layers before it found (the endpoint, its address, the
// route, the probe's outcome), and a failed connection is put at the one layer its evidence names (place_blame).
struct TargetCheck {
  TargetCheck(const Target& target, const HostFacts& facts, const ProxyEnv& proxy_env, const IfChoice& nccl_choice,
              const IfChoice& gloo_choice, const NetOptions& options)
      : t(target),
        f(facts),
        proxies(proxy_env),
        nccl(nccl_choice),
        gloo(gloo_choice),
        opts(options),
        timeout(options.timeout_s) {
    // Who would proxy it: the deciding client first, every client for the evidence.
    for (Client c : kClients) decisions.push_back(decide(c, proxies, t));
    primary = primary_client(t);
    if (primary)
      for (const ProxyDecision& d : decisions)
        if (d.client == *primary && d.proxied && d.proxy) via = &d;
    ep_host = via ? via->proxy->host : t.host;
    ep_port = via ? via->proxy->port : t.port;
    ep_text = host_port(ep_host, ep_port);
    what = via ? "the proxy " + ep_text : t.host;
  }

  TargetReport run() {
    TargetReport r{t, "direct", {}};
    if (via)
      r.path =
          "proxy " + via->proxy->text() + " (" + via->variable + ", " + std::string(name(via->client)) + "'s rules)";
    r.layers.push_back(check_resolve());
    if (address.empty()) return rest_not_checked(r, "not checked: " + what + " did not resolve");
    r.layers.push_back(check_route());
    if (!route.ok()) return rest_not_checked(r, "not checked: no route");
    probe();
    Check nh = check_next_hop();
    place_blame(nh);
    if (blame == Layer::route) blame_route(r.layers.back());  // the route, found before the probe, failed it
    r.layers.push_back(nh);
    r.layers.push_back(check_forward());
    r.layers.push_back(check_proxy());
    r.layers.push_back(check_transport());
    r.layers.push_back(check_service());
    return r;
  }

  // The layers after the last one checked, each not checked for the same reason.
  static TargetReport& rest_not_checked(TargetReport& r, const std::string& why) {
    bool after = false;
    for (Layer l : kLayers) {
      if (after) r.layers.push_back(make(l, Status::not_checked, why));
      after |= l == r.layers.back().layer;
    }
    return r;
  }

  // The endpoint's name (the target's, or through a proxy the proxy's); sets `address`.
  Check check_resolve() {
    Check resolve;
    if (is_numeric_address(ep_host)) {
      address = ep_host;
      resolve = make(Layer::resolve, Status::ok, ep_host + " is an address: nothing to resolve");
      if (t.rendezvous() && is_loopback_address(address))
        resolve = make(Layer::resolve, Status::warn,
                       t.origin + " is a loopback address (" + address + "): only ranks on this host reach it",
                       {t.origin + "=" + t.host},
                       "for a job across hosts set " + t.origin + " to an address the other hosts reach");
    } else {
      Resolution res = opts.probes.resolve ? opts.probes.resolve(ep_host, timeout) : resolve_host(ep_host, timeout);
      std::vector<std::string> ev;
      for (const auto& [addr, name] : f.hosts_file)
        if (name == ep_host) ev.push_back("/etc/hosts: " + addr + " " + name);
      if (!f.resolver.nameservers.empty())
        ev.push_back("resolver: nameserver " + join(f.resolver.nameservers, ", ") + " (/etc/resolv.conf" +
                     (f.resolver.wsl_generated ? ", generated by WSL)" : ")"));
      if (res.timed_out) {
        resolve = make(Layer::resolve, Status::broken,
                       ep_host + " did not resolve: no answer within " + format_seconds(timeout), ev,
                       "the resolver does not answer: check that its nameserver is reachable (on WSL: the generated "
                       "resolv.conf, or dnsTunneling=true in .wslconfig), or give an address instead of the name");
      } else if (res.gai_error != 0 || res.addresses.empty()) {
        ev.push_back("getaddrinfo: " + res.error);
        resolve = make(Layer::resolve, Status::broken, ep_host + " does not resolve (" + res.error + ")", ev,
                       "check the name, or add it to /etc/hosts, or give an address");
      } else {
        address = res.addresses.front();
        ev.insert(ev.begin(), ep_host + " -> " + join(res.addresses, ", ") + " in " + format_ms(res.ms) + " ms");
        const bool loop_name = ep_host == "localhost" || ep_host.ends_with(".localhost");
        if (is_loopback_address(address) && !loop_name) {
          const bool fatal = t.rendezvous();
          resolve = make(Layer::resolve, fatal ? Status::broken : Status::warn,
                         ep_host + " resolves to " + address + ", a loopback address" +
                             (fatal ? ": every rank told this address reaches itself, not " + t.origin + "'s host"
                                    : ": only this host answers there"),
                         ev,
                         "set " + (t.rendezvous() ? t.origin : std::string("the target")) +
                             " to an address the other hosts reach (this host's on its network), or change /etc/hosts' "
                             "loopback line for " +
                             ep_host + " (Debian's 127.0.1.1 HOSTNAME)");
        } else if (is_fake_ip_address(address)) {
          resolve =
              make(Layer::resolve, Status::warn,
                   ep_host + " resolves to " + address + ", in a proxy's fake-IP range (198.18.0.0/15)", ev,
                   "a proxy in TUN/fake-IP mode answers DNS: connections work only while it runs and routes them; "
                   "exclude this name from fake-IP (fake-ip-filter) for a job's own hosts");
        } else {
          resolve = make(Layer::resolve, Status::ok, ep_host + " -> " + join(res.addresses, ", "), ev);
        }
      }
      if (via) resolve.summary = "the proxy " + resolve.summary + " (the proxy resolves " + t.host + " itself)";
    }
    return resolve;
  }

  // The kernel's route to `address`; for a rendezvous, NCCL's and Gloo's interface against it; for Ray, its node IP.
  Check check_route() {
    route = opts.probes.route ? opts.probes.route(address) : route_to(address);
    std::vector<std::string> rev;
    if (t.rendezvous()) {
      for (const IfChoice* c : {&nccl, &gloo}) {
        std::string line =
            c->tool + " would use " + (c->interfaces.empty() ? "no interface" : join(c->interfaces, ", "));
        if (!c->variable.empty()) line += " (" + c->variable + ")";
        if (!c->rule.empty()) line += ": " + c->rule;
        rev.push_back(line);
      }
    }
    Check rc;
    if (route.error != 0) {
      rc = make(Layer::route, Status::broken, "no route to " + address + " (" + errno_name(route.error) + ")", rev,
                "add a route (a default route via the gateway: ip route add default via GATEWAY), or use an address on "
                "a connected network");
    } else if (!route.ok()) {
      rc = make(Layer::route, Status::broken,
                "the route to " + address + " is of type " + route.type + ": packets are dropped here", rev,
                "remove the " + route.type + " route (ip route show table all | grep " + route.type + ")");
    } else {
      std::string s = route.type == "local" ? address + " is this host (dev " + route.dev + ")"
                      : route.gateway.empty()
                          ? address + " is on-link, dev " + route.dev + ", source " + route.src
                          : "via gateway " + route.gateway + ", dev " + route.dev + ", source " + route.src;
      rc = make(Layer::route, Status::ok, s, rev);
      if (t.rendezvous() && route.type != "local") {
        std::vector<std::string> sets;  // NCCL_SOCKET_IFNAME=DEV, GLOO_SOCKET_IFNAME=DEV: one per tool that is off
        for (const IfChoice* c : {&nccl, &gloo}) {
          std::string off;  // why this tool would not leave by the route's interface
          if (!c->problem.empty())
            off = c->tool + ": " + c->problem;
          else if (!c->interfaces.empty() && c->interfaces.front() != route.dev)
            off = c->tool + " would use " + c->interfaces.front() + ", not " + route.dev;
          if (off.empty()) continue;
          rc.status = Status::warn;
          rc.summary += "; " + off;
          sets.push_back(std::string(c->tool == "NCCL" ? "NCCL_SOCKET_IFNAME" : "GLOO_SOCKET_IFNAME") + "=" +
                         route.dev);
        }
        if (!sets.empty()) rc.fix = "set " + join(sets, " and ") + " (the interface of the route to " + t.origin + ")";
      }
      if (t.origin == "RAY_ADDRESS") {
        UdpSource ray = udp_source_toward("8.8.8.8", 53);
        if (ray.err != 0) {
          rc.status = rc.status == Status::ok ? Status::warn : rc.status;
          rc.evidence.push_back("Ray's node-IP discovery (a UDP socket toward 8.8.8.8:53): " + errno_name(ray.err));
          if (rc.fix.empty())
            rc.fix = "Ray cannot find its node IP here: give ray start --node-ip-address=" + route.src;
        } else {
          rc.evidence.push_back("Ray's node IP (UDP toward 8.8.8.8:53, no packet sent): " + ray.address);
        }
      }
    }
    return rc;
  }

  // A TCP connection to the endpoint, through a proxy a CONNECT tunnel; where the deciding client goes direct but
  // others would take a proxy, that path at the same time.
  void probe() {
    // The probe: a TCP connection to the endpoint, and through a proxy a CONNECT tunnel.
    // Where the deciding client goes direct but others would take a proxy, that path is probed at the same time.
    if (!via && t.origin.find("proxy") == std::string::npos)
      for (const ProxyDecision& d : decisions)
        if (d.proxied && d.proxy && !other) other = &d;
    if (other) {
      auto tunnel_through = [host = t.host, port = t.port, p = *other->proxy, s = timeout]() -> std::optional<Tunnel> {
        Resolution pr = is_numeric_address(p.host) ? Resolution{{p.host}} : resolve_host(p.host, s);
        if (pr.addresses.empty()) return std::nullopt;
        return http_connect(pr.addresses.front(), p.port, host, port, s);
      };
      try {
        other_probe = std::async(std::launch::async, tunnel_through);
      } catch (const std::system_error&) {  // no thread to be had (an address-space limit): after the probe instead
        other_probe = std::async(std::launch::deferred, tunnel_through);
      }
    }
    if (via) {
      tunnel = http_connect(address, ep_port, t.host, t.port, timeout);
      conn = tunnel.to_proxy;
    } else {
      conn =
          opts.probes.connect ? opts.probes.connect(address, ep_port, timeout) : tcp_connect(address, ep_port, timeout);
    }
    conn_line = "connect(" + host_port(address, ep_port) + "): " + conn.describe();
  }

  Check check_next_hop() {
    local = route.type == "local";
    const std::string hop = route.gateway.empty() ? address : route.gateway;
    const std::string hop_name = route.gateway.empty() ? address + " (on-link)" : "the gateway " + route.gateway;
    Check nh;
    if (local) {
      nh = make(Layer::next_hop, Status::skipped, "this host: no next hop");
    } else {
      nb = opts.probes.neighbour ? opts.probes.neighbour(hop, route.ifindex) : neighbour(hop, route.ifindex);
      std::vector<std::string> ev = {conn_line};
      if (nb.found)
        ev.push_back("neighbour " + hop + " dev " + route.dev + ": " + nb.state +
                     (nb.lladdr.empty() ? "" : " " + nb.lladdr));
      if (nb.found && !nb.resolved() && !conn.ok) {
        const std::string wsl_fix =
            f.platform.wsl ? "WSL's virtual switch does not answer: restart WSL (wsl --shutdown) and check the Windows "
                             "host's vEthernet (WSL) adapter; a VPN on Windows can take the route away"
                           : "check the link to " + hop + " (ip neigh show " + hop + ", ip link show " + route.dev +
                                 "): the host or its ARP is down";
        nh = make(Layer::next_hop, Status::broken,
                  hop_name + " does not answer ARP: its neighbour entry is " + nb.state +
                      " (connect() reports this as EHOSTUNREACH, errno 113, after about 3 s)",
                  ev, wsl_fix);
      } else if (nb.found && nb.resolved()) {
        nh = make(Layer::next_hop, Status::ok, hop_name + " answers (" + nb.state + ", " + nb.lladdr + ")", ev);
      } else if (nb.found) {  // connected through it, though its entry has failed since
        nh = make(Layer::next_hop, Status::warn,
                  "the connection went through " + hop_name + ", but its neighbour entry is " + nb.state +
                      " now: ARP answers stopped",
                  ev, "check the link to " + hop + " (ip neigh show " + hop + "): its ARP answers come and go");
      } else if (conn.ok || conn.err == ECONNREFUSED) {
        nh = make(Layer::next_hop, Status::ok, hop_name + " passed the probe (no neighbour entry: a link without ARP)",
                  ev);
      } else {
        nh = make(Layer::next_hop, Status::not_checked, "no neighbour entry for " + hop + " after the probe", ev);
      }
    }
    return nh;
  }

  // Where a failed connection points: the one layer its evidence names.
  void place_blame(Check& nh) {
    if (!conn.ok) {
      if (nh.status == Status::broken)
        blame = Layer::next_hop;
      else if (conn.err == ENETUNREACH)
        blame = Layer::route;
      else if (conn.err == ECONNREFUSED)
        blame = via ? Layer::proxy : Layer::transport;
      else if ((conn.timed_out || conn.err == ETIMEDOUT || conn.err == EHOSTUNREACH) && !route.gateway.empty())
        blame = Layer::forward;
      else if (conn.err == EPERM || conn.err == EACCES)
        blame = Layer::transport;
      else
        blame = via ? Layer::proxy : Layer::transport;
      if (nh.status == Status::not_checked && *blame == Layer::forward) nh.status = Status::ok;  // ARP answered
    }
  }

  // ENETUNREACH from connect() although the kernel here gave a route: a router on the way (the gateway, or one beyond
  // it) has no route toward the address and said so. The route layer, pushed as found before the probe, is broken.
  void blame_route(Check& rc) const {
    const std::string who =
        route.gateway.empty() ? "a router on the way" : "the gateway " + route.gateway + " or a router beyond it";
    rc.status = Status::broken;
    rc.summary = "a route to " + address + " was found here (" + rc.summary +
                 "), but connect() got ENETUNREACH: " + who + " reports no route to " + address;
    rc.evidence.insert(rc.evidence.begin(), conn_line);
    if (!route.gateway.empty())
      rc.fix =
          std::string(f.platform.wsl ? "Windows (WSL's gateway " + route.gateway + ") has no route to " + address +
                                           ": check Windows' own routes and a VPN that may have taken them"
                                     : "the network beyond " + route.gateway + " has no route to " + address +
                                           ": check the routes on " + route.gateway + " and the routers after it") +
          ", or use an address that network reaches";
    else
      rc.fix =
          "the route changed between the lookup and the connect, or a routing rule sends this socket elsewhere: "
          "check ip rule and ip route get " +
          address + ", then run again";
  }

  Check check_forward() const {
    if (local || route.gateway.empty()) {
      return make(Layer::forward, Status::skipped, local ? "this host" : "on-link: nothing beyond a gateway");
    } else if (blame == Layer::next_hop) {
      return make(Layer::forward, Status::not_checked, "not checked: the gateway does not answer");
    } else if (blame == Layer::route) {
      return make(Layer::forward, Status::not_checked,
                  "not checked: a router reports no route to " + address + " (see route)", {conn_line});
    } else if (blame == Layer::forward) {
      return make(Layer::forward, Status::broken,
                  conn.err == EHOSTUNREACH
                      ? "a router beyond " + route.gateway + " reports " + address +
                            " unreachable (EHOSTUNREACH with the gateway answering ARP)"
                      : "the gateway " + route.gateway + " answers ARP, but nothing came back from " + address +
                            " within " + format_seconds(timeout) + ": dropped beyond the gateway",
                  {conn_line, "neighbour " + route.gateway + ": " + (nb.found ? nb.state : std::string("no entry"))},
                  f.platform.wsl
                      ? "Windows does not forward WSL's traffic (its NAT for the WSL switch): restart WSL "
                        "(wsl --shutdown); check a VPN or firewall on Windows, or try mirrored mode"
                      : "the gateway " + route.gateway +
                            " does not forward: check its forwarding and NAT (sysctl net.ipv4.ip_forward, its "
                            "firewall), or a firewall dropping further out");
    } else {
      return make(Layer::forward, Status::ok, "answers come back from beyond " + route.gateway, {conn_line});
    }
  }

  Check check_proxy() {
    std::vector<std::string> pev;
    std::vector<std::string> proxied_by;
    for (const ProxyDecision& d : decisions) {
      pev.push_back(std::string(name(d.client)) + ": " +
                    (d.proxied && d.proxy ? "proxy " + d.proxy->text() : "direct") + " (" + d.why + ")");
      if (d.proxied && d.proxy) proxied_by.push_back(std::string(name(d.client)));
    }
    for (const std::string& c : conflicts(proxies)) pev.push_back(c);
    Check px;
    if (t.origin.find("proxy") != std::string::npos) {
      px = make(Layer::proxy, Status::skipped, "this is the endpoint of " + t.origin);
    } else if (via) {
      const ProxyEndpoint& p = *via->proxy;
      pev.insert(pev.begin(), conn_line);
      if (!tunnel.status_line.empty())
        pev.insert(pev.begin() + 1, "CONNECT " + host_port(t.host, t.port) + ": " + tunnel.status_line);
      if (via->unsupported) {
        px = make(Layer::proxy, Status::broken,
                  std::string(name(via->client)) + " cannot use the proxy " + p.text() + ": " + via->why, pev,
                  "give " + std::string(name(via->client)) + " an http:// proxy, or exclude the target with no_proxy");
      } else if (blame == Layer::proxy && is_loopback_address(address) && wsl_nat(f)) {
        px = make(Layer::proxy, Status::broken,
                  via->variable + "=" + p.text() +
                      " is on loopback, and WSL in NAT mode has its own loopback: the proxy "
                      "listening on Windows' 127.0.0.1 cannot be reached from here (" +
                      errno_name(conn.err) + ")",
                  pev, wsl_loopback_proxy_fix(f, p, via->variable));
      } else if (blame == Layer::proxy && is_loopback_address(address)) {
        px = make(
            Layer::proxy, Status::broken,
            "nothing listens on the proxy " + p.text() + " in this network namespace (" + errno_name(conn.err) + ")",
            pev, "start the proxy here, or point " + via->variable + " at where it listens, or unset " + via->variable);
      } else if (blame == Layer::proxy) {
        px = make(Layer::proxy, Status::broken,
                  "the proxy " + p.text() + " refused the connection (" + errno_name(conn.err) +
                      "): nothing listens there, or it takes no clients from this network",
                  pev,
                  "check the proxy runs and listens on " + p.text() +
                      "; let it take LAN clients (allow-LAN) and allow the port in its host's firewall");
      } else if (!conn.ok) {
        px = make(
            Layer::proxy, Status::not_checked,
            "the proxy " + p.text() + " was not reached: see " + std::string(name(blame.value_or(Layer::transport))),
            pev);
      } else if (!tunnel.ok()) {
        const bool upstream = tunnel.status == 502 || tunnel.status == 503 || tunnel.status == 504;
        px = make(
            Layer::proxy, Status::broken,
            tunnel.status == 0     ? "the proxy " + p.text() + " gave no tunnel: " + tunnel.error
            : tunnel.status == 407 ? "the proxy " + p.text() + " wants credentials (407)"
            : upstream             ? "the proxy " + p.text() + " could not reach " + host_port(t.host, t.port) + " (" +
                             tunnel.status_line + ")"
                       : "the proxy " + p.text() + " refused to tunnel to " + host_port(t.host, t.port) + " (" +
                             tunnel.status_line + ")",
            pev,
            tunnel.status == 407 ? "put the credentials in the proxy URL (http://user:password@host:port)"
            : upstream
                ? "the proxy's own network cannot reach the target: check it from the proxy's host, or exclude "
                  "the target with no_proxy"
                : "allow this port in the proxy (tinyproxy ConnectPort, squid SSL_ports), or " + no_proxy_fix(t.host));
        blame = Layer::proxy;
      } else {
        px = make(
            Layer::proxy, Status::ok,
            "through " + p.text() + ": CONNECT " + host_port(t.host, t.port) + " -> " + std::to_string(tunnel.status),
            pev);
      }
    } else if (proxied_by.empty()) {
      const bool any = !proxies.empty();
      px = make(Layer::proxy, any ? Status::ok : Status::skipped,
                any ? "no client sends it through a proxy (no_proxy excludes it, or no variable applies)"
                    : "no proxy variable is set",
                any ? pev : std::vector<std::string>{});
    } else {
      // The deciding client goes direct, but others would go through a proxy: that path was tried too.
      std::string who =
          primary ? std::string(name(*primary)) + " goes direct" : "TCPStore, NCCL and Gloo connect directly";
      std::string summary = join(proxied_by, ", ") + " would send " + host_port(t.host, t.port) + " through " +
                            other->proxy->text() + " (" + other->variable + "); " + who;
      std::optional<Tunnel> tried = other_probe.get();
      if (!tried) {
        px = make(Layer::proxy, Status::broken, summary + ", and the proxy's name does not resolve", pev,
                  no_proxy_fix(t.host));
      } else {
        const Tunnel& other_tunnel = *tried;
        pev.insert(pev.begin(), "through " + other->proxy->text() + ": " +
                                    (other_tunnel.to_proxy.ok
                                         ? (other_tunnel.status_line.empty() ? other_tunnel.error
                                                                             : "CONNECT -> " + other_tunnel.status_line)
                                         : other_tunnel.to_proxy.describe()));
        if (!other_tunnel.ok())
          px = make(Layer::proxy, Status::broken, summary + ", and that path fails", pev, no_proxy_fix(t.host));
        else
          px = make(Layer::proxy, Status::warn, summary + ": it works through the proxy, but takes another path", pev,
                    no_proxy_fix(t.host));
      }
    }
    if (px.status == Status::ok && !conflicts(proxies).empty()) {
      px.status = Status::warn;
      px.fix = "give each proxy variable one value in both spellings (lowercase and uppercase), or unset one";
    }
    return px;
  }

  Check check_transport() const {
    if (via && blame) {
      return make(Layer::transport, Status::not_checked,
                  "no tunnel to " + host_port(t.host, t.port) + ": see " + std::string(name(*blame)));
    } else if (via) {
      return make(Layer::transport, Status::ok, "tunnel to " + host_port(t.host, t.port) + " through " + ep_text,
                  {conn_line});
    } else if (conn.ok) {
      return make(
          Layer::transport, Status::ok,
          "connected to " + host_port(address, ep_port) + " in " + format_ms(conn.ms) + " ms from " + conn.local,
          {conn_line});
    } else if (blame == Layer::transport && conn.err == ECONNREFUSED && opts.before_job && t.origin == "MASTER_ADDR") {
      return make(Layer::transport, Status::ok,
                  address + " answers on port " + std::to_string(ep_port) +
                      " (ECONNREFUSED: nothing listens there yet, as before the job's rank 0 opens its store)",
                  {conn_line});
    } else if (blame == Layer::transport) {
      std::vector<std::string> ev = {conn_line};
      std::string summary, fix;
      if (conn.err == ECONNREFUSED) {
        summary = "nothing listens on " + host_port(address, ep_port) + " (ECONNREFUSED)";
        fix = "start the service, or check the port";
        if (is_local_address(f, address) && !is_loopback_address(address)) {
          auto on = listeners(ep_port);
          if (!on.empty()) {
            ev.push_back("listening on port " + std::to_string(ep_port) + ": " + join(on, ", "));
            summary = "the service on port " + std::to_string(ep_port) + " listens on " + join(on, ", ") +
                      " only, not " + address;
            fix = "bind the service to 0.0.0.0 or to " + address +
                  " (a server bound to loopback is reachable from this host only)";
          }
        }
      } else if (conn.timed_out) {
        summary =
            address + " did not answer within " + format_seconds(timeout) + " (on-link: the host is down or drops it)";
        fix = "check that " + address + " is up and that its firewall lets port " + std::to_string(ep_port) + " in";
      } else {
        summary = "connect to " + host_port(address, ep_port) + " failed: " + errno_name(conn.err) + " (" +
                  std::strerror(conn.err) + ")";
        fix = conn.err == EPERM || conn.err == EACCES
                  ? "a local firewall rule rejects it (nft list ruleset / iptables -S)"
                  : "check the service and the path to it";
      }
      return make(Layer::transport, Status::broken, summary, ev, fix);
    } else {
      return make(Layer::transport, Status::not_checked,
                  "connect failed at an inner layer: " + std::string(name(blame.value_or(Layer::transport))),
                  {conn_line});
    }
  }

  Check check_service() const {
    const bool connected = via ? (conn.ok && tunnel.ok()) : conn.ok;
    if (!t.url()) {
      return make(Layer::service, Status::skipped, "raw TCP: no protocol above it is checked");
    } else if (t.scheme == "grpc") {
      return make(Layer::service, Status::skipped, "gRPC: the TCP connection is checked, HTTP/2 is not spoken");
    } else if (!connected) {
      return make(Layer::service, Status::not_checked, "not checked: no connection");
    } else {
      std::string url = t.url_text();
      if (url.starts_with("wss://")) url = "https://" + url.substr(6);
      if (url.starts_with("ws://")) url = "http://" + url.substr(5);
      Fetch fe = http_fetch(url, timeout, "", opts.ca_file);
      std::vector<std::string> ev = {fe.library + (fe.attempted ? " (libcurl's proxy rules, which are curl's)" : "")};
      if (fe.attempted) {
        ev.push_back("GET " + url + (fe.primary_ip.empty() ? "" : " via " + fe.primary_ip) + ": " +
                     (fe.curl_code == 0 ? "HTTP " + std::to_string(fe.http_status) : fe.curl_error) + " in " +
                     format_ms(fe.ms) + " ms");
        if (fe.connect_status) ev.push_back("the proxy's answer to CONNECT: " + std::to_string(fe.connect_status));
      }
      if (!fe.attempted) {
        return make(Layer::service, Status::not_checked, "not checked: " + fe.library, ev);
      } else if (fe.curl_code == 60 || fe.curl_code == 51 || fe.curl_code == 77) {
        return make(Layer::service, Status::broken,
                    "TLS: the server's certificate is not trusted (" + fe.curl_error + ")", ev,
                    "an intercepting proxy or a private CA: give its CA (--cacert FILE here; SSL_CERT_FILE, "
                    "REQUESTS_CA_BUNDLE for Python clients), or check the host name");
      } else if (fe.curl_code == 35) {
        return make(Layer::service, Status::broken, "the TLS handshake failed (" + fe.curl_error + ")", ev,
                    "the port does not speak TLS, or a middlebox breaks it: check the scheme and port");
      } else if (fe.curl_code != 0) {
        return make(Layer::service, Status::broken, "no HTTP answer: " + fe.curl_error, ev,
                    "the connection opens but the service does not answer: check the service and the URL");
      } else if (fe.http_status >= 500) {
        return make(Layer::service, Status::warn,
                    "the service answered HTTP " + std::to_string(fe.http_status) + " (a server error)", ev);
      } else {
        return make(Layer::service, Status::ok,
                    std::string(t.tls() ? "TLS verified, " : "") + "HTTP " + std::to_string(fe.http_status) + " in " +
                        format_ms(fe.ms) + " ms",
                    ev);
      }
    }
  }

  const Target& t;
  const HostFacts& f;
  const ProxyEnv& proxies;
  const IfChoice& nccl;
  const IfChoice& gloo;
  const NetOptions& opts;
  const double timeout;
  std::vector<ProxyDecision> decisions;
  std::optional<Client> primary;
  const ProxyDecision* via = nullptr;    // the deciding client's proxy, when it takes one
  const ProxyDecision* other = nullptr;  // another client's proxy, for a target the deciding client reaches directly
  std::string ep_host;                   // the endpoint connected to: the target, or the proxy
  uint16_t ep_port = 0;
  std::string ep_text;
  std::string what;     // the endpoint in words
  std::string address;  // its address, once resolved
  Route route;
  Connect conn;
  Tunnel tunnel;
  std::future<std::optional<Tunnel>> other_probe;
  std::string conn_line;  // the probe's outcome, as evidence
  bool local = false;     // the address is this host's
  Neighbour nb;
  std::optional<Layer> blame;
};

}  // namespace

std::vector<Check> check_process(const HostFacts& f) {
  std::vector<Check> out;
  const ProcessContext& c = f.context;
  std::vector<std::string> ev = {"network namespace " + (c.netns.empty() ? "unknown" : c.netns),
                                 "parent's: " + (c.parent_netns.empty() ? c.parent_error : c.parent_netns),
                                 "PID 1's: " + (c.init_netns.empty() ? c.init_error : c.init_netns),
                                 "interfaces: " + interfaces_line(c.interfaces)};
  const std::string outside = !c.parent_netns.empty() && c.parent_netns != c.netns ? c.parent_netns
                              : !c.init_netns.empty() && c.init_netns != c.netns   ? c.init_netns
                                                                                   : "";
  if (c.socket_errno != 0) {
    ev.push_back("socket(AF_INET, SOCK_STREAM): " + errno_name(c.socket_errno));
    out.push_back(make(Layer::context, Status::broken,
                       "this process may not open a network socket (" + errno_name(c.socket_errno) +
                           "): a sandbox's system-call filter forbids it",
                       ev, "run the command outside the sandbox, or allow network access in the sandbox's settings"));
  } else if (c.only_loopback()) {
    out.push_back(make(Layer::context, Status::broken,
                       "this process's network namespace has only lo: an isolated sandbox" +
                           (outside.empty() ? std::string() : " (the parent or PID 1 is in " + outside + ")"),
                       ev,
                       "run it outside the sandbox, or give the sandbox network access; to see the difference, run "
                       "doctor net --json inside and outside and compare the two with doctor net --compare A B"));
  } else {
    out.push_back(make(Layer::context, Status::ok,
                       (outside.empty() ? "the host's network namespace" : "a network namespace of its own") +
                           std::string(", ") + std::to_string(c.interfaces.size()) + " interfaces",
                       ev));
  }
  const Platform& p = f.platform;
  std::vector<std::string> pev;
  if (!p.osrelease.empty()) pev.push_back("kernel " + p.osrelease);
  if (!p.wsl_mode.empty()) pev.push_back("networking mode " + p.wsl_mode + " (from " + p.wsl_mode_source + ")");
  if (!p.windows_host.empty()) pev.push_back("Windows host (default gateway): " + p.windows_host);
  if (!p.container.empty()) pev.push_back("container: " + p.container);
  if (p.wsl && p.wsl_mode == "none") {
    out.push_back(
        make(Layer::platform, Status::broken, "WSL with networking mode none: it has no network", pev,
             "set networkingMode=nat or mirrored under [wsl2] in %UserProfile%\\.wslconfig, then wsl --shutdown"));
  } else if (p.wsl) {
    std::string s = "WSL" + p.wsl_version + ", networking mode " + (p.wsl_mode.empty() ? "unknown" : p.wsl_mode);
    if (p.wsl_mode == "nat" || p.wsl_mode.empty())
      s += ": Windows is the gateway" + (p.windows_host.empty() ? std::string() : " " + p.windows_host) +
           ", and Windows' 127.0.0.1 is not this 127.0.0.1";
    out.push_back(make(Layer::platform, Status::ok, s, pev));
  } else {
    out.push_back(make(
        Layer::platform, Status::ok,
        p.container.empty() ? "Linux; no WSL, no container seen" : "Linux, in a " + p.container + " container", pev));
  }
  return out;
}

TargetReport check_target(const Target& t, const HostFacts& f, const ProxyEnv& proxies, const IfChoice& nccl,
                          const IfChoice& gloo, const NetOptions& opts) {
  return TargetCheck(t, f, proxies, nccl, gloo, opts).run();
}

std::optional<Verdict> peers_verdict(const PeerMatrix& m) {
  for (size_t from = 0; from < m.cells.size(); ++from)
    for (size_t to = 0; to < m.cells[from].size(); ++to) {
      const PeerCell& c = m.cells[from][to];
      if (from == to || c.ok || from >= m.endpoints.size() || to >= m.endpoints.size()) continue;
      const PeerEndpoint& a = m.endpoints[from];
      const PeerEndpoint& b = m.endpoints[to];
      Check check{c.layer,
                  Status::broken,
                  "rank " + std::to_string(from) + " (" + a.host + ", " + a.interface + ") cannot reach rank " +
                      std::to_string(to) + " at " + b.address + ":" + std::to_string(b.port) + ": " + c.why,
                  {std::to_string(m.failing_pairs()) + " of " + std::to_string(m.world * (m.world - 1)) +
                   " pairs failing (the matrix above)"},
                  c.layer == Layer::route || c.layer == Layer::context
                      ? "give every rank an interface its peers reach: NCCL_SOCKET_IFNAME=<that interface> (and "
                        "GLOO_SOCKET_IFNAME), and no loopback address for a host name in /etc/hosts"
                      : "let the ranks reach each other on the ports NCCL and Gloo use: check the firewalls (nft list "
                        "ruleset) and security groups between " +
                            a.host + " and " + b.host + ", or pick another interface with NCCL_SOCKET_IFNAME"};
      return Verdict{Status::broken, "peers " + std::to_string(from) + " -> " + std::to_string(to), check};
    }
  return std::nullopt;
}

// A rank whose Gloo would listen elsewhere than the matrix connected (or finds no interface at all): the job's Gloo
// connections take a path nobody checked.
std::optional<Verdict> peers_warning(const PeerMatrix& m) {
  std::vector<std::string> ranks;
  const PeerEndpoint* first = nullptr;
  for (const PeerEndpoint& e : m.endpoints) {
    if (!e.gloo_differs() && !(e.gloo_interface.empty() && !e.gloo_problem.empty())) continue;
    ranks.push_back(std::to_string(e.rank));
    if (!first) first = &e;
  }
  if (!first) return std::nullopt;
  const PeerEndpoint& e = *first;
  const std::string probed = e.interface.empty() ? e.address : e.interface + " (" + e.address + ")";
  Check check{Layer::route,
              Status::warn,
              e.gloo_interface.empty()
                  ? "rank " + std::to_string(e.rank) + " (" + e.host + "): Gloo finds no interface: " + e.gloo_problem
                  : "rank " + std::to_string(e.rank) + " (" + e.host + "): Gloo would use " + e.gloo_interface + " (" +
                        e.gloo_address + "), not " + probed + " where the matrix connected: Gloo's path is not checked",
              {"Gloo elsewhere on rank" + std::string(ranks.size() == 1 ? " " : "s ") + join(ranks, ", ") + " of " +
               std::to_string(m.world) + " (the endpoints above)"},
              e.interface.empty() ? "give Gloo the interface of " + e.address + " with GLOO_SOCKET_IFNAME (exact names)"
                                  : "set GLOO_SOCKET_IFNAME=" + e.interface +
                                        " (Gloo takes exact names) so that Gloo uses the interface "
                                        "the matrix checked, or NCCL_SOCKET_IFNAME to Gloo's and run --peers again"};
  if (!e.gloo_problem.empty() && !e.gloo_interface.empty()) check.evidence.push_back("Gloo: " + e.gloo_problem);
  return Verdict{Status::warn, "peers rank " + std::to_string(e.rank), check};
}

Verdict decide_verdict(const NetReport& r) {
  for (Status want : {Status::broken, Status::warn}) {
    for (const Check& c : r.process)
      if (c.status == want) return Verdict{want, "", c};
    for (const TargetReport& t : r.targets)
      for (const Check& c : t.layers)
        if (c.status == want) return Verdict{want, t.target.text, c};
    if (want == Status::broken && r.peers)
      if (auto v = peers_verdict(*r.peers)) return *v;
    if (want == Status::warn && r.peers)
      if (auto v = peers_warning(*r.peers)) return *v;
  }
  Verdict v;
  v.check.summary = r.peers ? "every rank reaches every other (" + std::to_string(r.peers->world) + " ranks)"
                    : r.targets.empty() ? "this process's network is fine; no target was checked"
                                        : "every layer is fine for " + std::to_string(r.targets.size()) +
                                              (r.targets.size() == 1 ? " target" : " targets");
  return v;
}

NetReport diagnose(const std::vector<Target>& targets, const HostFacts& facts, const GetEnv& env,
                   const NetOptions& opts) {
  check_environment(env);
  NetReport r;
  r.host = facts.hostname;
  r.facts = facts;
  r.proxy_env = read_proxy_env(env);
  r.nccl = nccl_choice(facts.context.interfaces, env);
  r.gloo = gloo_choice(facts.context.interfaces, env, facts);
  r.process = check_process(facts);
  // The targets at once, on at most kMaxTargetWorkers threads taking the next target as each finishes: a dead network
  // costs one timeout per that many targets, and hundreds of targets never ask for hundreds of threads (each probe may
  // start one or two of its own). A thread that cannot be started (an address-space or process limit) leaves its
  // share to the others; this thread takes targets too, so they are checked even when no thread starts.
  r.targets.resize(targets.size());
  std::vector<std::exception_ptr> failed(targets.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < targets.size();) {
      try {
        r.targets[i] = check_target(targets[i], facts, r.proxy_env, r.nccl, r.gloo, opts);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> workers;
  const size_t helpers = std::min(targets.size(), kMaxTargetWorkers) - (targets.empty() ? 0 : 1);
  workers.reserve(helpers);
  for (size_t i = 0; i < helpers; ++i) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  if (targets.empty())
    r.note =
        "no target given and none in the environment (MASTER_ADDR, RAY_ADDRESS, proxy variables): give one, e.g. "
        "coldstart doctor net https://pypi.org/ or HOST:PORT";
  r.verdict = decide_verdict(r);
  return r;
}

}  // namespace coldstart::net
