// The layers at a target's end, each a function of the target's inputs and of what the layers before it found
// (target_check.h): proxy (every client's decision, the deciding client's tunnel, another client's path), transport
// (the connection, and who listens where it was refused) and service (an HTTP(S) request for a URL).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "coord/address.h"
#include "net/probe.h"
#include "net/target_check.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

bool wsl_nat(const HostFacts& facts) {
  return facts.platform.wsl && (facts.platform.wsl_mode == "nat" || facts.platform.wsl_mode.empty());
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

bool is_local_address(const HostFacts& facts, const std::string& address) {
  for (const Interface& i : facts.context.interfaces) {
    for (const auto& a : i.ipv4)
      if (a == address) return true;
    for (const auto& a : i.ipv6)
      if (a == address) return true;
  }
  return is_loopback_address(address);
}

std::string wsl_loopback_proxy_fix(const HostFacts& facts, const ProxyEndpoint& proxy, const std::string& variable) {
  const std::string host =
      facts.platform.windows_host.empty() ? "<the Windows host: WSL's default gateway>" : facts.platform.windows_host;
  return "WSL in NAT mode cannot reach Windows' loopback. Either point " + variable + " at the Windows host (export " +
         variable + "=http://" + host + ":" + std::to_string(proxy.port) +
         "), turn on the proxy's allow-LAN setting and allow port " + std::to_string(proxy.port) +
         " in Windows' firewall; or switch WSL to mirrored mode with autoProxy (%UserProfile%\\.wslconfig: [wsl2] "
         "networkingMode=mirrored, autoProxy=true; then wsl --shutdown)";
}

// The proxy layer's evidence: every client's decision, then each variable spelled twice with different values.
std::vector<std::string> proxy_evidence(const ProxyPath& path, const ProxyEnv& proxies) {
  std::vector<std::string> evidence;
  for (const ProxyDecision& d : path.decisions)
    evidence.push_back(std::string(name(d.client)) + ": " +
                       (d.proxied && d.proxy ? "proxy " + d.proxy->text() : "direct") + " (" + d.why + ")");
  for (const std::string& c : conflicts(proxies)) evidence.push_back(c);
  return evidence;
}

// The deciding client's proxy refused the connection (blame is the proxy's): on loopback under WSL's NAT, on loopback
// elsewhere, or on another host.
Check proxy_refused(const TargetInputs& in, const TargetFindings& found, std::vector<std::string> evidence) {
  const ProxyDecision& via = *found.path.via;
  const ProxyEndpoint& proxy = *via.proxy;
  const std::string err = errno_name(found.probe.connection.err);
  if (is_loopback_address(found.address) && wsl_nat(in.facts))
    return make_check(Layer::proxy, Status::broken,
                      via.variable + "=" + proxy.text() +
                          " is on loopback, and WSL in NAT mode has its own loopback: the proxy "
                          "listening on Windows' 127.0.0.1 cannot be reached from here (" +
                          err + ")",
                      evidence, wsl_loopback_proxy_fix(in.facts, proxy, via.variable));
  if (is_loopback_address(found.address))
    return make_check(
        Layer::proxy, Status::broken,
        "nothing listens on the proxy " + proxy.text() + " in this network namespace (" + err + ")", evidence,
        "start the proxy here, or point " + via.variable + " at where it listens, or unset " + via.variable);
  const PortProbe* other = found.probe.connection.timed_out ? found.probe.host_answer(found.address) : nullptr;
  if (icmp_sender(found) == Sender::endpoint || other) {
    if (other) evidence.insert(evidence.begin() + 1, found.probe.other_ports_line(found.address));
    return make_check(
        Layer::proxy, Status::broken,
        "the proxy's host " + found.address +
            (other ? " answers on port " + std::to_string(other->port) + " but drops port " + std::to_string(proxy.port)
                   : " rejects port " + std::to_string(proxy.port) + " (" + found.probe.connection.icmp.describe() +
                         ")") +
            ": a firewall on it stops this client before the proxy sees it",
        evidence,
        "allow TCP port " + std::to_string(proxy.port) + " in the firewall of " + found.address +
            (in.facts.platform.wsl ? " (Windows: an inbound rule for the proxy's port on the WSL "
                                     "adapter)"
                                   : " (firewall-cmd --add-port, nft/iptables input rules)") +
            ", and let the proxy take clients from this network (allow-LAN)");
  }
  return make_check(Layer::proxy, Status::broken,
                    "the proxy " + proxy.text() + " refused the connection (" + err +
                        "): nothing listens there, or it takes no clients from this network",
                    evidence,
                    "check the proxy runs and listens on " + proxy.text() +
                        "; let it take LAN clients (allow-LAN) and allow the port in its host's firewall");
}

// The deciding client's proxy took the connection but gave no tunnel to the target.
Check tunnel_refused(const TargetInputs& in, const TargetFindings& found, std::vector<std::string> evidence) {
  const ProxyEndpoint& proxy = *found.path.via->proxy;
  const Tunnel& tunnel = found.probe.tunnel;
  const std::string target = coord::host_port(in.target.host, in.target.port);
  const bool upstream = tunnel.status == 502 || tunnel.status == 503 || tunnel.status == 504;
  if (tunnel.refused()) return proxy_refusal(in, found, std::move(evidence));
  return make_check(
      Layer::proxy, Status::broken,
      tunnel.status == 0     ? "the proxy " + proxy.text() + " gave no tunnel: " + tunnel.error
      : tunnel.status == 407 ? "the proxy " + proxy.text() + " wants credentials (407)"
      : upstream ? "the proxy " + proxy.text() + " could not reach " + target + " (" + tunnel.status_line + ")"
                 : "the proxy " + proxy.text() + " refused to tunnel to " + target + " (" + tunnel.status_line + ")",
      evidence,
      tunnel.status == 407 ? "put the credentials in the proxy URL (http://user:password@host:port)"
      : upstream ? "the proxy's own network cannot reach the target: check it from the proxy's host, or exclude "
                   "the target with no_proxy"
                 : "allow this port in the proxy (tinyproxy ConnectPort, squid SSL_ports), or " +
                       no_proxy_fix(in.target.host));
}

// The proxy layer where the deciding client takes a proxy: the connection to it, then its tunnel.
ProxyLayer check_deciding_proxy(const TargetInputs& in, const TargetFindings& found,
                                std::vector<std::string> evidence) {
  const ProxyDecision& via = *found.path.via;
  const ProxyEndpoint& proxy = *via.proxy;
  const Tunnel& tunnel = found.probe.tunnel;
  evidence.insert(evidence.begin(), found.probe.connect_line);
  if (found.probe.connection.ok && (!tunnel.status_line.empty() || !tunnel.error.empty()))
    evidence.insert(evidence.begin() + 1, "CONNECT " + coord::host_port(in.target.host, in.target.port) + ": " +
                                              (tunnel.status_line.empty() ? tunnel.error : tunnel.status_line));
  if (via.unsupported)
    return {
        make_check(Layer::proxy, Status::broken,
                   std::string(name(via.client)) + " cannot use the proxy " + proxy.text() + ": " + via.why, evidence,
                   "give " + std::string(name(via.client)) + " an http:// proxy, or exclude the target with no_proxy"),
        found.blame};
  if (found.blame == Layer::proxy) return {proxy_refused(in, found, std::move(evidence)), found.blame};
  if (!found.probe.connection.ok)
    return {make_check(Layer::proxy, Status::not_checked,
                       "the proxy " + proxy.text() + " was not reached: see " +
                           std::string(name(found.blame.value_or(Layer::transport))),
                       evidence),
            found.blame};
  if (!tunnel.ok()) return {tunnel_refused(in, found, std::move(evidence)), Layer::proxy};
  return {make_check(Layer::proxy, Status::ok,
                     "through " + proxy.text() + ": CONNECT " + coord::host_port(in.target.host, in.target.port) +
                         " -> " + std::to_string(tunnel.status),
                     evidence),
          found.blame};
}

// The proxy layer where the deciding client goes direct but the clients in `proxied_by` would take path.other's
// proxy: that path, probed beside the connection.
Check check_other_proxy(const TargetInputs& in, const TargetFindings& found, const std::vector<std::string>& proxied_by,
                        std::vector<std::string> evidence) {
  const ProxyDecision& other = *found.path.other;
  const std::string through = join(proxied_by, ", ") + " would send " +
                              coord::host_port(in.target.host, in.target.port) + " through " + other.proxy->text() +
                              " (" + other.variable + ")";
  const std::string who = found.path.deciding_client ? std::string(name(*found.path.deciding_client)) + " goes direct"
                                                     : "TCPStore, NCCL and Gloo connect directly";
  // The direct path as the connection found it: said to work where it connected, and never said to fail here.
  const std::string direct = who + (found.probe.connection.ok ? ", which works" : "");
  if (!found.other_tunnel)
    return make_check(Layer::proxy, Status::broken,
                      through + ", but the proxy's name does not resolve, so that path fails; " + direct, evidence,
                      no_proxy_fix(in.target.host));
  const Tunnel& other_tunnel = *found.other_tunnel;
  const std::string answer =
      other_tunnel.to_proxy.ok
          ? (other_tunnel.status_line.empty() ? other_tunnel.error : "CONNECT -> " + other_tunnel.status_line)
          : other_tunnel.to_proxy.describe();
  evidence.insert(evidence.begin(), "through " + other.proxy->text() + ": " + answer);
  if (!other_tunnel.ok())
    return make_check(Layer::proxy, Status::broken, through + ", and that proxy path fails (" + answer + "); " + direct,
                      evidence, no_proxy_fix(in.target.host));
  return make_check(Layer::proxy, Status::warn,
                    through + "; " + who + ": it works through the proxy, but takes another path", evidence,
                    no_proxy_fix(in.target.host));
}

// What a host's own firewall answering for a port looks like, and where to open it.
std::string open_port_fix(const std::string& address, uint16_t port) {
  const std::string p = std::to_string(port);
  return "open TCP port " + p + " on " + address + ": firewall-cmd --add-port=" + p +
         "/tcp (and again with --permanent), or its nftables/iptables input rules (nft list ruleset, iptables -S "
         "INPUT); in a cloud, its security group or network ACL";
}

// This host's own rules stopped the connection: its packets never left (a drop), or its own reject answered.
Check stopped_here(const TargetFindings& found, std::vector<std::string> evidence) {
  const Connect& connection = found.probe.connection;
  const std::string dst = coord::host_port(found.address, found.path.endpoint_port);
  const std::string fix =
      "this host's output rules stop TCP to " + dst +
      ": check nft list ruleset (an output chain), iptables -S OUTPUT, firewall-cmd --list-all, and a VPN's kill "
      "switch or a cgroup eBPF filter";
  if (connection.dropped_here()) {
    evidence.push_back("TCP_INFO at the timeout: " + std::to_string(connection.syn_retries) +
                       " SYN retransmission(s) tried, " + std::to_string(connection.retries_in_flight) +
                       " in flight: each was refused before it left this host");
    return make_check(Layer::transport, Status::broken,
                      "the connection to " + dst + " never left this host: a firewall here drops its packets", evidence,
                      fix);
  }
  return make_check(
      Layer::transport, Status::broken,
      "this host's own firewall rejects the connection to " + dst + " (" + connection.icmp.describe() + ")", evidence,
      fix);
}

// The endpoint's host answers, but not on this port: its own ICMP reject, or nothing while other ports answer.
Check port_refused_by_host(const TargetFindings& found, std::vector<std::string> evidence) {
  const Connect& connection = found.probe.connection;
  const std::string& address = found.address;
  const uint16_t port = found.path.endpoint_port;
  const std::string p = std::to_string(port);
  if (icmp_sender(found) == Sender::endpoint) {
    const bool port_unreach = connection.icmp.kind() == IcmpKind::port_unreachable;
    return make_check(Layer::transport, Status::broken,
                      address + " itself rejects port " + p + ": its firewall answers " + connection.icmp.describe() +
                          (port_unreach ? " (a port where nothing listens answers with a TCP reset instead)"
                                        : ", which connect() reports as " + errno_name(connection.err) + " (" +
                                              std::strerror(connection.err) + "), though the way there works"),
                      evidence, open_port_fix(address, port));
  }
  const PortProbe& other = *found.probe.host_answer(address);
  evidence.push_back(found.probe.other_ports_line(address));
  return make_check(Layer::transport, Status::broken,
                    address + " answers on port " + std::to_string(other.port) + " but nothing comes back from port " +
                        p + " within " + format_ms(connection.ms) + " ms: a firewall drops port " + p + ", on " +
                        address + " or on the way",
                    evidence,
                    open_port_fix(address, port) + "; and any firewall between this host and " + address +
                        " (the way itself works: port " + std::to_string(other.port) + " answered)");
}

// A connection that failed where the transport is to blame: nothing listening (or listening on loopback only), no
// answer, a firewall on this host or on the endpoint's, or a local rule.
Check transport_failed(const TargetInputs& in, const TargetFindings& found) {
  const Connect& connection = found.probe.connection;
  const std::string& address = found.address;
  const uint16_t port = found.path.endpoint_port;
  std::vector<std::string> evidence = {found.probe.connect_line};
  if (connection.dropped_here() || icmp_sender(found) == Sender::this_host)
    return stopped_here(found, std::move(evidence));
  if (icmp_sender(found) == Sender::endpoint || (connection.timed_out && found.probe.host_answer(address) != nullptr))
    return port_refused_by_host(found, std::move(evidence));
  std::string summary, fix;
  if (connection.err == ECONNREFUSED) {
    summary = "nothing listens on " + coord::host_port(address, port) + " (ECONNREFUSED)";
    fix = "start the service, or check the port";
    if (is_local_address(in.facts, address) && !is_loopback_address(address)) {
      auto on = listeners(port);
      if (!on.empty()) {
        evidence.push_back("listening on port " + std::to_string(port) + ": " + join(on, ", "));
        summary =
            "the service on port " + std::to_string(port) + " listens on " + join(on, ", ") + " only, not " + address;
        fix = "bind the service to 0.0.0.0 or to " + address +
              " (a server bound to loopback is reachable from this host only)";
      }
    }
  } else if (connection.timed_out) {
    if (!found.probe.other_ports.empty()) evidence.push_back(found.probe.other_ports_line(address));
    summary = address + " did not answer within " + format_seconds(in.options.timeout_s) +
              (found.probe.other_ports.empty() ? "" : ", on any port asked") +
              " (on-link: the host is down or drops it)";
    fix = "check that " + address + " is up and that its firewall lets port " + std::to_string(port) + " in";
  } else {
    summary = "connect to " + coord::host_port(address, port) + " failed: " + errno_name(connection.err) + " (" +
              std::strerror(connection.err) + ")";
    fix = connection.err == EPERM || connection.err == EACCES
              ? "a local firewall rule rejects it (nft list ruleset / iptables -S)"
              : "check the service and the path to it";
  }
  return make_check(Layer::transport, Status::broken, summary, evidence, fix);
}

// The service's answer to an HTTP(S) request libcurl made.
Check service_answer(const Target& target, const std::string& url, const Fetch& fetch) {
  std::vector<std::string> evidence = {fetch.library +
                                       (fetch.attempted ? " (libcurl's proxy rules, which are curl's)" : "")};
  if (fetch.attempted) {
    evidence.push_back("GET " + url + (fetch.primary_ip.empty() ? "" : " via " + fetch.primary_ip) + ": " +
                       (fetch.curl_code == 0 ? "HTTP " + std::to_string(fetch.http_status) : fetch.curl_error) +
                       " in " + format_ms(fetch.ms) + " ms");
    if (fetch.connect_status)
      evidence.push_back("the proxy's answer to CONNECT: " + std::to_string(fetch.connect_status));
  }
  if (!fetch.attempted)
    return make_check(Layer::service, Status::not_checked, "not checked: " + fetch.library, evidence);
  if (fetch.curl_code == 60 || fetch.curl_code == 51 || fetch.curl_code == 77)
    return make_check(Layer::service, Status::broken,
                      "TLS: the server's certificate is not trusted (" + fetch.curl_error + ")", evidence,
                      "an intercepting proxy or a private CA: give its CA (--cacert FILE here; SSL_CERT_FILE, "
                      "REQUESTS_CA_BUNDLE for Python clients), or check the host name");
  if (fetch.curl_code == 35)
    return make_check(Layer::service, Status::broken, "the TLS handshake failed (" + fetch.curl_error + ")", evidence,
                      "the port does not speak TLS, or a middlebox breaks it: check the scheme and port");
  if (fetch.curl_code != 0)
    return make_check(Layer::service, Status::broken, "no HTTP answer: " + fetch.curl_error, evidence,
                      "the connection opens but the service does not answer: check the service and the URL");
  if (fetch.http_status >= 500)
    return make_check(Layer::service, Status::warn,
                      "the service answered HTTP " + std::to_string(fetch.http_status) + " (a server error)", evidence);
  return make_check(Layer::service, Status::ok,
                    std::string(target.tls() ? "TLS verified, " : "") + "HTTP " + std::to_string(fetch.http_status) +
                        " in " + format_ms(fetch.ms) + " ms",
                    evidence);
}

}  // namespace

ProxyLayer check_proxy(const TargetInputs& in, const TargetFindings& found) {
  std::vector<std::string> evidence = proxy_evidence(found.path, in.proxies);
  std::vector<std::string> proxied_by;
  for (const ProxyDecision& d : found.path.decisions)
    if (d.proxied && d.proxy) proxied_by.push_back(std::string(name(d.client)));
  ProxyLayer out{Check{}, found.blame};
  if (is_proxy_endpoint(in.target)) {
    out.check = make_check(Layer::proxy, Status::skipped, "this is the endpoint of " + in.target.origin);
  } else if (found.path.via) {
    out = check_deciding_proxy(in, found, std::move(evidence));
  } else if (proxied_by.empty()) {
    const bool any = !in.proxies.empty();
    out.check = make_check(Layer::proxy, any ? Status::ok : Status::skipped,
                           any ? "no client sends it through a proxy (no_proxy excludes it, or no variable applies)"
                               : "no proxy variable is set",
                           any ? evidence : std::vector<std::string>{});
  } else {
    out.check = check_other_proxy(in, found, proxied_by, std::move(evidence));
  }
  if (out.check.status == Status::ok && !conflicts(in.proxies).empty()) {
    out.check.status = Status::warn;
    out.check.fix = "give each proxy variable one value in both spellings (lowercase and uppercase), or unset one";
  }
  return out;
}

Check check_transport(const TargetInputs& in, const TargetFindings& found) {
  const Target& target = in.target;
  const Connect& connection = found.probe.connection;
  const std::string& line = found.probe.connect_line;
  const uint16_t port = found.path.endpoint_port;
  if (found.path.via && found.blame && found.blame != Layer::transport)
    return make_check(
        Layer::transport, Status::not_checked,
        "no tunnel to " + coord::host_port(target.host, target.port) + ": see " + std::string(name(*found.blame)));
  if (found.path.via && !found.blame)
    return make_check(
        Layer::transport, Status::ok,
        "tunnel to " + coord::host_port(target.host, target.port) + " through " + found.path.endpoint_text, {line});
  if (connection.ok)
    return make_check(Layer::transport, Status::ok,
                      "connected to " + coord::host_port(found.address, port) + " in " + format_ms(connection.ms) +
                          " ms from " + connection.local,
                      {line});
  if (found.blame == Layer::transport && connection.err == ECONNREFUSED && !connection.icmp.present &&
      in.options.before_job && target.origin == "MASTER_ADDR")
    return make_check(Layer::transport, Status::ok,
                      found.address + " answers on port " + std::to_string(port) +
                          " (ECONNREFUSED: nothing listens there yet, as before the job's rank 0 opens its store)",
                      {line});
  if (found.blame == Layer::transport) return transport_failed(in, found);
  return make_check(Layer::transport, Status::not_checked,
                    "connect failed at an inner layer: " + std::string(name(found.blame.value_or(Layer::transport))),
                    {line});
}

ServiceLayer check_service(const TargetInputs& in, const TargetFindings& found) {
  const Target& target = in.target;
  const bool connected =
      found.path.via ? (found.probe.connection.ok && found.probe.tunnel.ok()) : found.probe.connection.ok;
  ServiceLayer out;
  if (!target.url()) {
    out.check = make_check(Layer::service, Status::skipped, "raw TCP: no protocol above it is checked");
    return out;
  }
  if (target.scheme == "grpc") {
    out.check =
        make_check(Layer::service, Status::skipped, "gRPC: the TCP connection is checked, HTTP/2 is not spoken");
    return out;
  }
  if (!connected) {
    out.check = make_check(Layer::service, Status::not_checked, "not checked: no connection");
    return out;
  }
  std::string url = target.url_text();
  if (url.starts_with("wss://")) url = "https://" + url.substr(6);
  if (url.starts_with("ws://")) url = "http://" + url.substr(5);
  auto fetch = [&](int mss) {
    return in.options.probes.fetch ? in.options.probes.fetch(url, in.options.timeout_s, mss)
                                   : http_fetch(url, in.options.timeout_s, "", in.options.ca_file, mss);
  };
  out.full = fetch(0);
  out.check = service_answer(target, url, out.full);
  // Stalled after the connection worked (CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR): the same in small packets.
  if (out.full.attempted && (out.full.curl_code == 28 || out.full.curl_code == 56)) out.small = fetch(kSmallMss);
  return out;
}

}  // namespace coldstart::net
