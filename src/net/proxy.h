// Which proxy each client that matters would use for a target, each by its own documented rules: curl (and libcurl),
// Python's urllib, requests, gRPC C-core (and Ray, which turns gRPC's proxy support off), and Go's net/http. The rules
// differ in which variable names and cases they read, in what a no_proxy entry means (`*`, a suffix, a leading dot,
// a port, a CIDR block, loopback) and in which proxy schemes they accept. Pure functions of the variables and the
// target: the tests are a table of variable sets × targets.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/target.h"

namespace coldstart::net {

// grpc: gRPC C-core as of grpcio 1.85; ray: the gRPC 1.58 that Ray bundles, behind RAY_grpc_enable_http_proxy (off
// by default). go: net/http's ProxyFromEnvironment (golang.org/x/net/http/httpproxy).
enum class Client { curl, urllib, requests, grpc, ray, go };
inline constexpr Client kClients[] = {Client::curl, Client::urllib, Client::requests,
                                      Client::grpc, Client::ray,    Client::go};

}  // namespace coldstart::net

template <>
struct coldstart::EnumNames<coldstart::net::Client> {
  using Client = net::Client;
  static constexpr std::pair<Client, std::string_view> names[] = {
      {Client::curl, "curl"}, {Client::urllib, "urllib"}, {Client::requests, "requests"},
      {Client::grpc, "grpc"}, {Client::ray, "ray"},       {Client::go, "go"}};
};

namespace coldstart::net {

inline std::string_view name(Client c) { return name_of(c); }  // "curl", "urllib", "requests", "grpc", "ray", "go"

// Every proxy variable as the process has it (ProxyEnv, model/net.h), both cases, set but empty ones included (an empty
// value means something to some clients): http_proxy, HTTP_PROXY, https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY,
// ws_proxy, WS_PROXY, wss_proxy, WSS_PROXY, grpc_proxy, GRPC_PROXY, no_proxy, NO_PROXY, no_grpc_proxy, NO_GRPC_PROXY,
// and RAY_grpc_enable_http_proxy. (GRPC_PROXY and NO_GRPC_PROXY no client reads: kept so that a decision can say so.)
ProxyEnv read_proxy_env(const GetEnv& env);
const std::vector<std::string_view>& proxy_variable_names();  // the variables read_proxy_env keeps, in its order

// Two spellings of one variable with different values ("https_proxy=A, HTTPS_PROXY=B"), one line each, naming which
// spelling each client reads.
std::vector<std::string> conflicts(const ProxyEnv& env);

// A proxy variable's value: "http://user:pw@host:3128", "host:3128", "[::1]:3128", "socks5h://host:1080". Nothing when
// it cannot be parsed. The port defaults as curl's does (1080 for http://, 443 for https://, 1080 for socks); a
// decision puts in its client's own default instead (urllib and Go: 80 for http://; gRPC: 443).
struct ProxyEndpoint {
  std::string scheme;  // lower case; "http" when none was written
  std::string host;    // IPv6 without brackets
  uint16_t port = 0;
  bool port_given = false;   // the value names the port
  std::string text() const;  // "http://host:3128" (no credentials)
};
std::optional<ProxyEndpoint> parse_proxy(std::string_view value);

struct ProxyDecision {
  Client client = Client::curl;
  bool proxied = false;
  std::optional<ProxyEndpoint> proxy;  // when proxied (also the proxy gRPC or Ray ignored, when unsupported)
  std::string variable;                // the variable whose value was used, or the no_proxy variable that excluded
  std::string why;  // one line: "https_proxy=http://127.0.0.1:7890 (curl reads ...)", "no_proxy entry '.corp' matches"
  // The variable names a proxy this client cannot use: curl, urllib, requests and Go try it and fail (proxied stays
  // true); gRPC and Ray log an error and connect directly (proxied false, `proxy` what the value named). A value that
  // is no proxy address at all leaves proxied false and no proxy, `why` saying what the client then does.
  bool unsupported = false;
};

// A HOST:PORT or grpc:// target is decided as the http:// URL an HTTP client would be given for it; gRPC and Ray use
// their rules whatever the scheme. curl keeps ws:// and wss:// (ws_proxy, then http_proxy); the others map them to
// http:// and https://.
ProxyDecision decide(Client c, const ProxyEnv& env, const Target& t);

}  // namespace coldstart::net
