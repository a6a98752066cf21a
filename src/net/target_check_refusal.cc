// A proxy that takes the connection and refuses the tunnel (403, or a hang-up without a word) refuses one of three
// things, which one answer cannot tell apart: this client (an allow-list: tinyproxy's Allow, squid's http_access,
// mihomo's allow-lan closing a LAN client's connection at once), the destination (a filter), or the port (tinyproxy's
// ConnectPort, squid's SSL_ports). The recheck (target_check.h's ProxyRecheck) asked the same proxy again (a connection
// asking nothing, the target's host on 443, a name that does not exist); the fix names the setting its answers point
// at.
#include "coord/address.h"
#include "net/target_check.h"

namespace coldstart::net {
namespace {

std::string answer_text(const Tunnel& t) {
  if (!t.to_proxy.ok) return t.to_proxy.describe();
  if (t.hung_up) return "hung up without an answer";
  return t.status_line.empty() ? t.error : t.status_line;
}

// This process's address as the proxy sees it: the local end of the connection, without its port.
std::string client_address(const Connect& c) {
  std::string a = c.local.substr(0, c.local.rfind(':'));
  if (a.size() >= 2 && a.front() == '[') a = a.substr(1, a.size() - 2);
  return a.empty() ? "this host's address" : a;
}

// What the proxy said when asked again, one line a question.
void add_recheck_evidence(std::vector<std::string>& evidence, const ProxyRecheck& again, const Target& target) {
  if (again.greeting)
    evidence.push_back("a connection asking nothing: " +
                       (again.greeting->refused() ? answer_text(*again.greeting) : "no word (it waits for a request)"));
  if (again.https_port)
    evidence.push_back("CONNECT " + coord::host_port(target.host, 443) + ": " + answer_text(*again.https_port));
  if (again.nowhere)
    evidence.push_back("CONNECT " + std::string(kNowhereHost) +
                       ":443 (a name that does not exist): " + answer_text(*again.nowhere));
}

}  // namespace

Check proxy_refusal(const TargetInputs& in, const TargetFindings& found, std::vector<std::string> evidence) {
  const ProxyEndpoint& proxy = *found.path.via->proxy;
  const Tunnel& tunnel = found.probe.tunnel;
  const ProxyRecheck& again = found.probe.recheck;
  const std::string target = coord::host_port(in.target.host, in.target.port);
  const std::string how = tunnel.hung_up ? "hung up on CONNECT " + target + " without an answer"
                                         : "refused to tunnel to " + target + " (" + tunnel.status_line + ")";
  const std::string the_proxy = "the proxy " + proxy.text();
  const std::string client = client_address(found.probe.connection);
  const std::string admit =
      "let this client in: the proxy's allow-list must admit " + client + " (tinyproxy: Allow " + client +
      "; squid: an acl src for it with http_access allow; mihomo/Clash: allow-lan: true and lan-allowed-ips; v2rayN "
      "and the like: their allow-LAN setting), or point the proxy variable at a proxy that admits it";
  add_recheck_evidence(evidence, again, in.target);
  auto served = [](const std::optional<Tunnel>& t) { return t && t->to_proxy.ok && t->status != 0 && !t->refused(); };
  auto refused = [](const std::optional<Tunnel>& t) { return t && t->refused(); };
  if (refused(again.greeting))
    return make_check(Layer::proxy, Status::broken,
                      the_proxy + " refuses this client (" + client + "): it " + how +
                          ", and refuses a connection that asks nothing the same way, before any request",
                      evidence, admit);
  if (served(again.https_port))
    return make_check(Layer::proxy, Status::broken,
                      the_proxy + " serves this client and " + in.target.host + " on port 443, but " + how +
                          ": it refuses port " + std::to_string(in.target.port),
                      evidence,
                      "allow port " + std::to_string(in.target.port) + " in the proxy (tinyproxy: ConnectPort " +
                          std::to_string(in.target.port) + "; squid: add it to SSL_ports and Safe_ports), or " +
                          no_proxy_fix(in.target.host));
  if (refused(again.nowhere))
    return make_check(Layer::proxy, Status::broken,
                      the_proxy + " " + how +
                          ", and refuses a name that does not exist the same way: it refuses this client (" + client +
                          "), or serves only the destinations on its list",
                      evidence,
                      admit +
                          "; or, where it lists its destinations (squid acl dstdomain, tinyproxy FilterDefaultDeny), "
                          "add " +
                          in.target.host);
  if (served(again.nowhere))
    return make_check(Layer::proxy, Status::broken,
                      the_proxy + " serves this client but " + how +
                          (again.https_port ? ", and refuses its port 443 too: it refuses this destination"
                                            : ": it refuses this destination or its port"),
                      evidence,
                      "the proxy's rules refuse this destination (tinyproxy Filter, squid acl dstdomain or dst, a "
                      "mihomo/Clash REJECT rule)" +
                          std::string(again.https_port ? "" : " or its port (tinyproxy ConnectPort, squid SSL_ports)") +
                          ": allow it there, or " + no_proxy_fix(in.target.host));
  return make_check(
      Layer::proxy, Status::broken,
      the_proxy + " " + how + ": this client, the destination or the port (asking again did not tell)", evidence,
      "let this client in (tinyproxy Allow, squid http_access, allow-LAN), and allow this destination and "
      "port in the proxy (tinyproxy ConnectPort and Filter, squid SSL_ports and dstdomain), or " +
          no_proxy_fix(in.target.host));
}

}  // namespace coldstart::net
