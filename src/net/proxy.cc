// Each client's proxy rules, written from its source (named above each client's function) and checked against the
// installed clients by tests/net/test_proxy_clients.py. The decision is made in the order the clients make it: the
// proxy variable first (nothing set: direct), then the client's own exclusions (Go's loopback rule, no_proxy), then
// whether the client can speak to that kind of proxy at all. Six clients' rules side by side make it some 950 lines:
// apart, the differences between them (what the table test is about) would be read across six files.
#include "net/proxy.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "util/strings.h"

namespace coldstart::net {
// The helpers live in a namespace of their own, not an anonymous one: a unity build puts src/net's files into one
// translation unit, where two files' anonymous helpers of one name would collide.
namespace proxy_rules {

bool iends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

// Python's str.strip() and Go's strings.TrimSpace, for ASCII.
std::string_view strip_space(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_digits(std::string_view s) {
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// C's atoi as curl calls it on a CIDR entry's bits (blanks, a sign, the leading digits; "24x" is 24), saturating
// where atoi's overflow is undefined: "10.0.0.0/99999999999" is a very large count, not whatever atoi makes of it.
long long c_atoi(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  long long v = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
    v = std::min(v * 10 + (s[i] - '0'), 1LL << 40);
  return negative ? -v : v;
}

// Set and not empty: how curl (curl_getenv) and Go (getEnvAny) take a variable.
const std::string* nonempty(const ProxyEnv& env, std::string_view name) {
  const std::string* v = find_var(env, name);
  return v && !v->empty() ? v : nullptr;
}

// A value for messages: the password of a URL's userinfo hidden, an empty value as '', one line and at most 200 bytes
// (util/strings.h's shown()): a decision's `why` stays one bounded line whatever the variables hold.
std::string value_shown(std::string_view value) {
  return value.empty() ? "''" : coldstart::shown(without_password(value));
}
// A no_proxy entry for messages: one line, at most 200 bytes.
std::string entry_shown(std::string_view entry) { return coldstart::shown(entry); }

// ---- Addresses ----

struct Ip {
  int family = 0;  // AF_INET or AF_INET6
  unsigned char bytes[16] = {};
  size_t size() const { return family == AF_INET ? 4 : 16; }
  bool loopback() const {
    if (family == AF_INET) return bytes[0] == 127;
    static const unsigned char v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(bytes, v6_loopback, 16) == 0 || (std::memcmp(bytes, v4_mapped, 12) == 0 && bytes[12] == 127);
  }
};

// Strict dotted-quad IPv4 or IPv6 text (inet_pton), as curl, gRPC and Go parse addresses.
std::optional<Ip> parse_ip(std::string_view text) {
  std::string s(text);
  Ip ip;
  if (inet_pton(AF_INET, s.c_str(), ip.bytes) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  return std::nullopt;
}

// Python's socket.inet_aton (C inet_aton): also "10.1" and "127.1", as requests' is_ipv4_address takes them.
std::optional<Ip> parse_ipv4_aton(std::string_view text) {
  std::string s(text);
  in_addr a{};
  if (inet_aton(s.c_str(), &a) == 0) return std::nullopt;
  Ip ip;
  ip.family = AF_INET;
  std::memcpy(ip.bytes, &a, 4);
  return ip;
}

// The first `bits` bits of a and b are equal (same family).
bool prefix_equal(const Ip& a, const Ip& b, unsigned bits) {
  if (a.family != b.family) return false;
  size_t full = bits / 8;
  if (full > a.size() || (full == a.size() && bits % 8)) return false;
  if (std::memcmp(a.bytes, b.bytes, full) != 0) return false;
  unsigned rest = bits % 8;
  if (!rest) return true;
  unsigned char mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (b.bytes[full] & mask);
}

// ---- The URL a client is given ----

struct Url {
  std::string scheme;    // as this client sees it: "http", "https", "ws", "wss"
  std::string host_raw;  // as given (IPv6 without brackets)
  std::string host;      // lower case
  uint16_t port = 0;
  bool port_written = false;  // the URL names its port (a HOST:PORT target always does)
  bool ipv6() const { return host.find(':') != std::string::npos; }
};

uint16_t scheme_port(std::string_view scheme) { return scheme == "http" || scheme == "ws" ? 80 : 443; }

// Whether the target's URL names its port: a HOST:PORT (or grpc://) always does; a URL does when its port is not the
// scheme's default, or when its text spells the default out ("https://host:443/").
bool port_written(const Target& t) {
  if (t.scheme.empty() || t.scheme == "grpc") return true;
  if (t.port != scheme_port(t.scheme)) return true;
  const std::string text = lower(t.text), host = lower(t.host), port = ":" + std::to_string(t.port);
  const bool v6 = host.find(':') != std::string::npos;
  return text.find((v6 ? "[" + host + "]" : host) + port) != std::string::npos;
}

// The URL `c` is given for `t`. curl keeps ws/wss (it has ws_proxy and wss_proxy); Python's and Go's websocket
// clients ask their HTTP stack with the scheme mapped to http/https. A HOST:PORT or grpc:// target is an http:// URL.
Url url_for(Client c, const Target& t) {
  Url u;
  u.scheme = t.scheme;
  if (u.scheme.empty() || u.scheme == "grpc") u.scheme = "http";
  if (c != Client::curl && u.scheme == "ws") u.scheme = "http";
  if (c != Client::curl && u.scheme == "wss") u.scheme = "https";
  u.host_raw = t.host;
  if (u.host_raw.size() > 2 && u.host_raw.front() == '[' && u.host_raw.back() == ']')
    u.host_raw = u.host_raw.substr(1, u.host_raw.size() - 2);
  u.host = lower(u.host_raw);
  u.port = t.port ? t.port : scheme_port(u.scheme);
  u.port_written = port_written(t);
  return u;
}

// ---- Decisions, shared ----

struct Pick {
  std::string var, value;
};

struct Match {
  std::string entry, how;  // how: "exact", "suffix", "CIDR", ...
};

ProxyDecision direct(Client c, std::string why) {
  ProxyDecision d;
  d.client = c;
  d.why = std::move(why);
  return d;
}

ProxyDecision bypass(Client c, const std::string& no_var, const Match& m, const Url& u, const Pick& p) {
  ProxyDecision d;
  d.client = c;
  d.variable = no_var;
  d.why = fmt::format("{} entry '{}' matches {} ({}): {} goes direct, not through {}={}", no_var, entry_shown(m.entry),
                      u.host, m.how, name(c), p.var, value_shown(p.value));
  return d;
}

// "none is set" for a direct decision, with the variables the client skipped that are set ("HTTP_PROXY is set, but
// curl does not read it").
std::string none_set(Client c, const Url& u, std::string_view reads, const ProxyEnv& env,
                     std::initializer_list<std::string_view> unread) {
  const bool grpc = c == Client::grpc || c == Client::ray;
  std::string why = fmt::format("{} reads {} {}: none is set", name(c), reads,
                                grpc ? "whatever the scheme" : "for " + u.scheme + "://");
  std::vector<std::string> skipped;
  for (std::string_view n : unread)
    if (nonempty(env, n)) skipped.push_back(std::string(n));
  if (!skipped.empty())
    why += fmt::format("; {} {} set, but {} does not read {}", join(skipped, " and "),
                       skipped.size() == 1 ? "is" : "are", name(c), skipped.size() == 1 ? "it" : "them");
  return why;
}

// How a client takes a proxy of a given scheme for a URL: can it, on which port when none is given, and why not.
struct Support {
  bool ok = true;
  bool direct_instead = false;  // the client ignores the value and connects directly (gRPC)
  uint16_t default_port = 0;
  std::string why_not;
};

Support support(Client c, const Url& u, const std::string& proxy_scheme) {
  Support s;
  const std::string& ps = proxy_scheme;
  const bool socks = ps == "socks" || ps == "socks4" || ps == "socks4a" || ps == "socks5" || ps == "socks5h";
  switch (c) {
    case Client::curl:
      // curl's parse_proxy: http (the default), https, socks4 (also socks://), socks4a, socks5, socks5h.
      s.default_port = ps == "https" ? 443 : 1080;
      if (ps != "http" && ps != "https" && !socks) {
        s.ok = false;
        s.why_not = fmt::format("curl has no {}:// proxy type (\"Unsupported proxy scheme\"): the transfer fails", ps);
      }
      break;
    case Client::urllib:
      // ProxyHandler.proxy_open: for https:// URLs it always tunnels with a plain-text CONNECT over
      // HTTPSConnection (port 443 when none is given); for http:// URLs it opens the proxy's own scheme.
      if (u.scheme == "https") {
        s.default_port = 443;
        if (ps != "http") {
          s.ok = false;
          s.why_not = "urllib speaks plain-text CONNECT to every proxy of an https:// URL: ";
          s.why_not += ps == "https" ? "an https:// proxy expects TLS, and the request fails"
                                     : "it has no " + ps + " support, and the request fails";
        }
      } else {
        s.default_port = ps == "https" ? 443 : 80;
        if (ps != "http" && ps != "https") {
          s.ok = false;
          s.why_not = fmt::format("urllib has no {}:// handler (\"unknown url type\"): the request fails", ps);
        }
      }
      break;
    case Client::requests:
      // urllib3's proxy_from_url / SOCKSProxyManager.
      s.default_port = ps == "http" ? 80 : ps == "https" ? 443 : 1080;
      if (ps == "socks") {
        s.ok = false;
        s.why_not = "urllib3 knows socks4, socks4a, socks5 and socks5h, not socks:// (ProxySchemeUnknown)";
      } else if (ps != "http" && ps != "https" && !socks) {
        s.ok = false;
        s.why_not = fmt::format("urllib3 has no {}:// proxy type (ProxySchemeUnknown): the request fails", ps);
      }
      break;
    case Client::grpc:
    case Client::ray:
      // http_proxy_mapper.cc GetHttpProxyServer: the value must be a URI with scheme http; anything else is
      // logged and the channel connects directly. The proxy's port defaults to 443.
      s.default_port = 443;
      if (ps != "http") {
        s.ok = false;
        s.direct_instead = true;
        s.why_not = fmt::format(
            "gRPC takes only http:// proxies: it logs \"'{}' scheme not supported in proxy URI\" and connects directly",
            ps);
      }
      break;
    case Client::go:
      // net/http Transport.Proxy: http, https, socks5 and socks5h.
      s.default_port = ps == "http" ? 80 : ps == "https" ? 443 : 1080;
      if (ps != "http" && ps != "https" && ps != "socks5" && ps != "socks5h") {
        s.ok = false;
        s.why_not = fmt::format("Go's net/http takes http, https, socks5 and socks5h proxies, not {}://: it fails", ps);
      }
      break;
  }
  return s;
}

// The decision to use p's value: the endpoint with this client's default port, or why the client cannot use it.
ProxyDecision use_proxy(Client c, const Url& u, const Pick& p, std::string_view reads) {
  ProxyDecision d;
  d.client = c;
  d.variable = p.var;
  d.proxied = true;
  std::optional<ProxyEndpoint> ep = parse_proxy(p.value);
  const std::string head = fmt::format("{}={} ({})", p.var, value_shown(p.value), reads);
  const bool grpc = c == Client::grpc || c == Client::ray;
  if (!ep) {
    // No endpoint to report: proxied stays false whether the client then fails or goes direct.
    d.unsupported = true;
    d.proxied = false;
    const char* then = c == Client::curl ? "curl fails (\"Unsupported proxy syntax\")"
                       : grpc            ? "gRPC logs an error and connects directly"
                       : c == Client::go ? "Go ignores it and connects directly"
                                         : "the request fails";
    d.why = head + ": not a proxy address (HOST:PORT or SCHEME://HOST:PORT); " + then;
    return d;
  }
  const std::string raw = std::string(strip_space(p.value));
  if (grpc && raw.find("://") == std::string::npos) {
    // URI::Parse("127.0.0.1:7890") fails (a scheme starts with a letter); "proxy:3128" parses with scheme "proxy"
    // and no authority: either way GetHttpProxyServer gives up.
    d.proxied = false;
    d.unsupported = true;
    d.proxy = ep;
    d.why = head + ": gRPC needs a URI with http:// and cannot parse this one; it logs an error and connects directly";
    return d;
  }
  if (c == Client::ray && raw.rfind("http://", 0) != 0 && ep->scheme == "http") {
    // gRPC 1.58 (Ray's) compares the scheme as written; newer gRPC (1.85 tested) takes HTTP:// too.
    d.proxied = false;
    d.unsupported = true;
    d.proxy = ep;
    d.why = head +
            ": gRPC 1.58, which Ray bundles, takes the scheme only as lower-case http://; it logs an error "
            "and connects directly";
    return d;
  }
  Support s = support(c, u, ep->scheme);
  if (!ep->port_given) ep->port = s.default_port;
  d.proxy = ep;
  d.why = head;
  if (!ep->port_given && !s.direct_instead)
    d.why += fmt::format("; no port given: {} uses {}", name(c), s.default_port);
  if (!s.ok) {
    d.unsupported = true;
    d.proxied = !s.direct_instead;
    d.why += "; " + s.why_not;
  } else if (c == Client::requests && ep->scheme.rfind("socks", 0) == 0) {
    d.why += "; SOCKS needs PySocks (pip install requests[socks])";
  }
  return d;
}

// ---- curl ----

// curl lib/noproxy.c Curl_check_noproxy (lib/proxy.c proxy_check_noproxy since 2026): '*' alone matches all; an IPv4
// host is compared with IPv4 entries (exact, or CIDR since 7.86); a name with name entries, case-insensitively, one
// leading and one trailing dot ignored, equal or a suffix on a dot boundary. Entries with a port never match. An IPv6
// host reaches this unbracketed, so before 8.18 (curl PR #19828) it is compared as a name: "::1" matches "::1" but
// no IPv6 CIDR does (tested with 7.88); `ipv6_as_address` gives 8.18's rule, IPv6 exact or CIDR.
std::optional<Match> curl_no_proxy(const Url& u, std::string_view list, bool ipv6_as_address) {
  if (list == "*") return Match{"*", "'*' alone matches every host"};
  std::optional<Ip> ip = parse_ip(u.host);
  if (ip && ip->family == AF_INET6 && !ipv6_as_address) ip.reset();
  std::string_view name = u.host;
  if (!ip && !name.empty() && name.back() == '.') name.remove_suffix(1);
  // Entries are separated by commas and blanks (curl 7.88 still takes blanks; 8.9+ stops at the first blank-separated
  // entry).
  std::string tokens(list);
  for (char& ch : tokens)
    if (ch == ' ' || ch == '\t') ch = ',';
  for (const std::string& entry : split(tokens, ',')) {
    if (entry.empty()) continue;
    if (!ip) {
      std::string_view tok = entry;
      if (tok.back() == '.') tok.remove_suffix(1);
      if (!tok.empty() && tok.front() == '.') tok.remove_prefix(1);
      if (tok.size() == name.size() && iequals(tok, name)) return Match{entry, "exact"};
      if (tok.size() < name.size() && name[name.size() - tok.size() - 1] == '.' && iends_with(name, tok))
        return Match{entry, "suffix"};
      continue;
    }
    std::string_view addr = entry;
    unsigned bits = 0;
    size_t slash = entry.find('/');
    if (slash != std::string::npos) {
      addr = std::string_view(entry).substr(0, slash);
      const long long b = c_atoi(std::string_view(entry).substr(slash + 1));
      if (b < 0 || b > 128) continue;  // past any address's width: no match (curl: "too many bits")
      bits = static_cast<unsigned>(b);
    }
    std::optional<Ip> net = parse_ip(addr);
    if (!net || net->family != ip->family) continue;
    if (ip->family == AF_INET) {
      if (bits > 32) continue;
      if (bits == 0 || bits == 32) bits = 32;  // no slash, /0 and /32: the address itself
    } else {
      if (bits == 0) bits = 128;
      if (bits > 128) continue;
    }
    if (prefix_equal(*ip, *net, bits)) return Match{entry, slash == std::string::npos ? "exact" : "CIDR, curl 7.86+"};
  }
  return std::nullopt;
}

struct VarOrder {
  std::vector<std::string_view> vars;
  std::string reads;
};

VarOrder curl_order(const Url& u) {
  if (u.scheme == "https")
    return {{"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"},
            "curl reads https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY in that order for https://"};
  if (u.scheme == "ws")
    return {{"ws_proxy", "WS_PROXY", "http_proxy", "all_proxy", "ALL_PROXY"},
            "curl 8.4+ reads ws_proxy, WS_PROXY, http_proxy (never HTTP_PROXY), all_proxy, ALL_PROXY for ws://"};
  if (u.scheme == "wss")
    return {{"wss_proxy", "WSS_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"},
            "curl 8.4+ reads wss_proxy, WSS_PROXY, https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY for wss://"};
  return {{"http_proxy", "all_proxy", "ALL_PROXY"},
          "curl reads http_proxy (never HTTP_PROXY), all_proxy, ALL_PROXY in that order for http://"};
}

// curl lib/url.c detect_proxy and create_conn_helper_init_proxy (lib/proxy.c since 2026), CURLOPT_PROXY and
// CURLOPT_NOPROXY docs: <scheme>_proxy lower-case, then upper-case except HTTP_PROXY (a CGI header could set it),
// ws/wss falling back to http_proxy/https_proxy (8.4+), then all_proxy, ALL_PROXY; an empty value counts as unset
// (curl_getenv). no_proxy, else NO_PROXY, is checked first. No loopback exception.
ProxyDecision decide_curl(const ProxyEnv& env, const Url& u) {
  VarOrder order = curl_order(u);
  std::optional<Pick> pick;
  for (std::string_view v : order.vars)
    if (const std::string* val = nonempty(env, v)) {
      pick = Pick{std::string(v), *val};
      break;
    }
  if (!pick) {
    std::string reads = order.reads.substr(std::string_view("curl reads ").size());
    reads = reads.substr(0, reads.rfind(" for "));
    return direct(Client::curl, none_set(Client::curl, u, reads, env, {"HTTP_PROXY"}));
  }
  for (std::string_view nv : {"no_proxy", "NO_PROXY"})
    if (const std::string* list = nonempty(env, nv)) {
      if (auto m = curl_no_proxy(u, *list, false)) return bypass(Client::curl, std::string(nv), *m, u, *pick);
      if (auto m = curl_no_proxy(u, *list, true)) {
        ProxyDecision d = use_proxy(Client::curl, u, *pick, order.reads);
        d.why += fmt::format("; curl 8.18+ would go direct ({} '{}': it compares IPv6 addresses as addresses)", nv,
                             entry_shown(m->entry));
        return d;
      }
      break;
    }
  return use_proxy(Client::curl, u, *pick, order.reads);
}

// ---- Python: urllib and requests ----

// CPython Lib/urllib/request.py getproxies_environment: any-case <scheme>_proxy first, then the lower-case
// spelling overrides, and a set but empty lower-case one removes the scheme. `base` is lower-case ("https_proxy").
std::optional<Pick> python_var(const ProxyEnv& env, std::string_view base) {
  if (const std::string* v = find_var(env, base)) {
    if (v->empty()) return std::nullopt;
    return Pick{std::string(base), *v};
  }
  const std::string up = upper(base);
  if (const std::string* v = nonempty(env, up)) return Pick{up, *v};
  return std::nullopt;
}

// CPython Lib/urllib/request.py _splitport: "host:digits" splits at the last colon followed only by digits.
std::string_view python_splitport(std::string_view host) {
  size_t colon = host.rfind(':');
  if (colon == std::string_view::npos || !is_digits(host.substr(colon + 1))) return host;
  return host.substr(0, colon);
}

// CPython Lib/urllib/request.py proxy_bypass_environment: the whole value '*' matches all; each entry, stripped of
// blanks and of every leading dot and lower-cased, matches the host (with or without its port) exactly or as a suffix
// after a dot. No CIDR, no IP logic: "[::1]" needs its brackets, "10.0.0.5:8080" its port.
std::optional<Match> urllib_no_proxy(std::string_view host_seen, std::string_view list) {
  if (list == "*") return Match{"*", "the whole value '*' matches every host"};
  const std::string host = lower(host_seen);
  const std::string hostonly(python_splitport(host));
  for (const std::string& raw : split(list, ',')) {
    std::string_view e = strip_space(raw);
    if (e.empty()) continue;
    while (!e.empty() && e.front() == '.') e.remove_prefix(1);
    const std::string n = lower(e);
    if (hostonly == n || host == n) return Match{std::string(strip_space(raw)), "exact"};
    const std::string dotted = "." + n;
    if (iends_with(hostonly, dotted) || iends_with(host, dotted)) return Match{std::string(strip_space(raw)), "suffix"};
  }
  return std::nullopt;
}

// The no_proxy variable urllib reads: the lower-case one when set (empty: none), else a non-empty NO_PROXY.
std::optional<Pick> urllib_no_var(const ProxyEnv& env) { return python_var(env, "no_proxy"); }

// What urllib.request.Request.host is for the URL: host[:port] as written, IPv6 in brackets.
std::string urllib_host(const Url& u) {
  std::string h = u.ipv6() ? "[" + u.host_raw + "]" : u.host_raw;
  if (u.port_written) h += ":" + std::to_string(u.port);
  return h;
}

// CPython Lib/urllib/request.py ProxyHandler and getproxies_environment, proxy_bypass_environment (Linux:
// getproxies = getproxies_environment): the URL scheme's proxy only (ProxyHandler makes an "all_open" for all_proxy
// that nothing calls); no loopback exception. The CGI rule (REQUEST_METHOD drops HTTP_PROXY) is not modelled.
ProxyDecision decide_urllib(const ProxyEnv& env, const Url& u) {
  const std::string base = u.scheme + "_proxy";
  const std::string reads = fmt::format("urllib reads {}, else {}", base, upper(base));
  std::optional<Pick> pick = python_var(env, base);
  if (!pick) {
    if (const std::string* v = find_var(env, base); v && v->empty() && nonempty(env, upper(base)))
      return direct(Client::urllib, fmt::format("{} is set but empty, which hides {} from urllib: no proxy for {}://",
                                                base, upper(base), u.scheme));
    return direct(Client::urllib,
                  none_set(Client::urllib, u, base + ", " + upper(base), env, {"all_proxy", "ALL_PROXY"}));
  }
  if (auto nv = urllib_no_var(env))
    if (auto m = urllib_no_proxy(urllib_host(u), nv->value)) return bypass(Client::urllib, nv->var, *m, u, *pick);
  return use_proxy(Client::urllib, u, *pick, reads);
}

// requests utils.py should_bypass_proxies, own part: no_proxy (non-empty) else NO_PROXY, blanks removed; an IPv4
// host (inet_aton) matches CIDR entries (/1 to /32) or an equal entry; any other host matches by name, exactly or as
// a dot suffix, with or without the URL's written port. Entries are compared as written (not lower-cased).
std::optional<Match> requests_own_no_proxy(const Url& u, std::string_view list) {
  std::string compact;
  for (char ch : list)
    if (ch != ' ') compact += ch;
  std::vector<std::string> entries;
  for (const std::string& e : split(compact, ','))
    if (!e.empty()) entries.push_back(e);
  if (std::optional<Ip> ip = parse_ipv4_aton(u.host)) {
    for (const std::string& e : entries) {
      size_t slash = e.find('/');
      if (slash != std::string::npos && e.find('/', slash + 1) == std::string::npos) {
        auto bits = parse_int(std::string_view(e).substr(slash + 1));
        auto net = parse_ipv4_aton(std::string_view(e).substr(0, slash));
        if (bits && *bits >= 1 && *bits <= 32 && net) {
          if (prefix_equal(*ip, *net, static_cast<unsigned>(*bits))) return Match{e, "CIDR"};
          continue;
        }
      }
      if (u.host == e) return Match{e, "exact"};
    }
    return std::nullopt;
  }
  const std::string with_port = u.port_written ? u.host + ":" + std::to_string(u.port) : u.host;
  for (const std::string& raw : entries) {
    std::string_view e = raw;
    while (!e.empty() && e.front() == '.') e.remove_prefix(1);
    if (u.host == e || with_port == e) return Match{raw, "exact"};
    const std::string dotted = "." + std::string(e);
    if (u.host.ends_with(dotted) || with_port.ends_with(dotted)) return Match{raw, "suffix"};
  }
  return std::nullopt;
}

// requests utils.py get_environ_proxies, should_bypass_proxies, select_proxy and sessions.py
// resolve_proxies: urllib's getproxies (lower-case first), the scheme's proxy else all_proxy; excluded by its own
// no_proxy test (with CIDR for IPv4), then by urllib's proxy_bypass on the bare host name. No loopback exception.
ProxyDecision decide_requests(const ProxyEnv& env, const Url& u) {
  const std::string base = u.scheme + "_proxy";
  std::optional<Pick> pick = python_var(env, base);
  if (!pick) pick = python_var(env, "all_proxy");
  if (!pick) {
    if (const std::string* v = find_var(env, base); v && v->empty() && nonempty(env, upper(base)))
      return direct(Client::requests, fmt::format("{} is set but empty, which hides {} from requests (urllib's "
                                                  "getproxies): no proxy for {}://",
                                                  base, upper(base), u.scheme));
    return direct(Client::requests, none_set(Client::requests, u,
                                             fmt::format("{}, {}, all_proxy, ALL_PROXY", base, upper(base)), env, {}));
  }
  for (std::string_view nv : {"no_proxy", "NO_PROXY"})
    if (const std::string* list = nonempty(env, nv)) {
      if (auto m = requests_own_no_proxy(u, *list)) return bypass(Client::requests, std::string(nv), *m, u, *pick);
      break;
    }
  if (auto nv = urllib_no_var(env))
    if (auto m = urllib_no_proxy(u.host, nv->value)) {
      m->how += ", by urllib's proxy_bypass on the host name";
      return bypass(Client::requests, nv->var, *m, u, *pick);
    }
  return use_proxy(Client::requests, u, *pick,
                   fmt::format("requests reads {}, else {}, else all_proxy, else ALL_PROXY", base, upper(base)));
}

// ---- gRPC C-core and Ray ----

// gRPC's CIDR entry test (ServerInCIDRRange): ADDRESS/BITS, the target an IP literal of the same family; /0 matches
// every address of the family, BITS past the width compares the whole address.
bool grpc_cidr(const std::optional<Ip>& ip, std::string_view entry) {
  if (!ip) return false;
  size_t slash = entry.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == entry.size()) return false;
  std::optional<Ip> net = parse_ip(entry.substr(0, slash));
  std::string_view b = entry.substr(slash + 1);
  if (!net || !is_digits(b) || b.size() > 9) return false;
  unsigned bits = static_cast<unsigned>(std::atoi(std::string(b).c_str()));
  if (net->family != ip->family) return false;
  return prefix_equal(*ip, *net, std::min<unsigned>(bits, static_cast<unsigned>(ip->size() * 8)));
}

// gRPC 1.85 (grpcio 1.85.3, tested): entries split on commas and stripped; one leading dot ignored; the host equal
// or ending in "." + entry, case-insensitively (IP literals too: "0.5" matches 10.0.0.5); CIDR for IP targets. No '*',
// no trailing-dot or port handling.
std::optional<Match> grpc_no_proxy(const Url& u, std::string_view list) {
  std::optional<Ip> ip = parse_ip(u.host);
  for (const std::string& raw : split(list, ',')) {
    std::string_view e = strip_space(raw);
    if (grpc_cidr(ip, e)) return Match{std::string(e), "CIDR"};
    if (!e.empty() && e.front() == '.') e.remove_prefix(1);
    if (e.empty()) continue;
    if (iequals(u.host, e)) return Match{std::string(strip_space(raw)), "exact"};
    if (iends_with(u.host, "." + std::string(e))) return Match{std::string(strip_space(raw)), "suffix"};
  }
  return std::nullopt;
}

// gRPC 1.58 (bundled in Ray; http_proxy_mapper.cc ExactMatchOrSubdomain, tested with grpcio 1.58.0):
// absl::EndsWithIgnoreCase of the host and the stripped entry, no dot boundary ("example.com" matches
// notexample.com, ".example.com" does not match example.com); a blank entry (", ,") strips to "" and matches every
// host. CIDR for IP targets.
std::optional<Match> grpc158_no_proxy(const Url& u, std::string_view list) {
  std::optional<Ip> ip = parse_ip(u.host);
  for (const std::string& raw : split(list, ',')) {
    if (raw.empty()) continue;  // absl::SkipEmpty
    std::string_view e = strip_space(raw);
    if (iends_with(u.host, e)) {
      if (e.empty()) return Match{raw, "a blank entry, which gRPC 1.58's suffix test matches for every host"};
      return Match{std::string(e), iequals(u.host, e) ? "exact" : "plain suffix, no dot boundary"};
    }
    if (grpc_cidr(ip, e)) return Match{std::string(e), "CIDR"};
  }
  return std::nullopt;
}

// gRPC C-core src/core/handshaker/http_connect/http_proxy_mapper.cc (MapName, GetHttpProxyServer) and
// doc/core/default_http_proxy_mapper.md: the first variable set of grpc_proxy, https_proxy, http_proxy, lower-case
// only and whatever the target's scheme; set but empty means no proxy. Excluded by no_grpc_proxy when set, else
// no_proxy. Only http:// proxies (others are logged and ignored: direct). No loopback exception. `ray` picks the
// no_proxy test of gRPC 1.58, which Ray bundles.
ProxyDecision decide_grpc(Client c, const ProxyEnv& env, const Url& u) {
  std::optional<Pick> pick;
  for (std::string_view v : {"grpc_proxy", "https_proxy", "http_proxy"})
    if (const std::string* val = find_var(env, v)) {
      pick = Pick{std::string(v), *val};
      break;
    }
  if (!pick)
    return direct(c, none_set(c, u, "grpc_proxy, https_proxy, http_proxy (lower-case only)", env,
                              {"GRPC_PROXY", "HTTPS_PROXY", "HTTP_PROXY", "all_proxy", "ALL_PROXY"}));
  if (pick->value.empty())
    return direct(c, fmt::format("{} is set but empty: gRPC stops at the first of grpc_proxy, https_proxy, "
                                 "http_proxy that is set, and an empty one means no proxy",
                                 pick->var));
  for (std::string_view nv : {"no_grpc_proxy", "no_proxy"})
    if (const std::string* list = find_var(env, nv)) {
      std::optional<Match> m = c == Client::ray ? grpc158_no_proxy(u, *list) : grpc_no_proxy(u, *list);
      std::optional<Match> other = c == Client::ray ? grpc_no_proxy(u, *list) : grpc158_no_proxy(u, *list);
      if (m) {
        ProxyDecision d = bypass(c, std::string(nv), *m, u, *pick);
        if (!other && c == Client::grpc) d.why += "; gRPC 1.58 (Ray's) would proxy it";
        if (!other && c == Client::ray) d.why += "; newer gRPC (1.85) would proxy it";
        return d;
      }
      ProxyDecision d = use_proxy(c, u, *pick, "gRPC reads grpc_proxy, https_proxy, http_proxy, lower-case only");
      if (other && c == Client::grpc)
        d.why += fmt::format("; gRPC 1.58 (Ray's) would go direct ({} '{}')", nv, entry_shown(other->entry));
      if (other && c == Client::ray)
        d.why += fmt::format("; newer gRPC (1.85) would go direct ({} '{}')", nv, entry_shown(other->entry));
      return d;
    }
  return use_proxy(c, u, *pick, "gRPC reads grpc_proxy, https_proxy, http_proxy, lower-case only");
}

bool ray_proxy_enabled(const ProxyEnv& env) {
  const std::string* v = find_var(env, "RAY_grpc_enable_http_proxy");
  if (!v) return false;
  const std::string s = lower(*v);
  return s == "1" || s == "true";
}

// Ray src/ray/rpc/grpc_client.h BuildChannel and python/ray/_private/ray_constants.py GRPC_ENABLE_HTTP_PROXY:
// every channel gets GRPC_ARG_ENABLE_HTTP_PROXY = RAY_grpc_enable_http_proxy ("1" or "true", any case; default off,
// ray#6662, PR #6744 and #23526). When on, gRPC's rules as in the gRPC 1.58 that Ray bundles
// (bazel/ray_deps_setup.bzl).
ProxyDecision decide_ray(const ProxyEnv& env, const Url& u) {
  if (ray_proxy_enabled(env)) {
    ProxyDecision d = decide_grpc(Client::ray, env, u);
    d.why = "RAY_grpc_enable_http_proxy is on, gRPC's rules: " + d.why;
    return d;
  }
  ProxyDecision g = decide_grpc(Client::ray, env, u);
  std::string why =
      "Ray turns gRPC's proxy support off (GRPC_ARG_ENABLE_HTTP_PROXY=0) unless RAY_grpc_enable_http_proxy=1";
  if (const std::string* v = find_var(env, "RAY_grpc_enable_http_proxy"))
    why += fmt::format(" (it is '{}')", entry_shown(*v));
  if (g.proxied && g.proxy)
    why += fmt::format(": direct, though gRPC alone would use {}", g.variable);
  else
    why += ": direct";
  return direct(Client::ray, why);
}

// ---- Go ----

// golang.org/x/net/http/httpproxy config.init and useProxy: entries lower-cased and trimmed; '*' anywhere matches
// all; CIDR (IPv4, IPv6) and IP entries, optionally with a port, match IP hosts; name entries match names: "a.com"
// the name and its subdomains, ".a.com" and "*.a.com" subdomains only, with an optional port compared with the
// URL's port (the scheme's default when none is written).
std::optional<Match> go_no_proxy(const Url& u, std::string_view list) {
  std::optional<Ip> ip = parse_ip(u.host);
  const std::string port = std::to_string(u.port);
  for (const std::string& raw : split(list, ',')) {
    const std::string entry(strip_space(raw)), p = lower(entry);
    if (p.empty()) continue;
    if (p == "*") return Match{"*", "'*' matches every host"};
    size_t slash = p.find('/');
    if (slash != std::string::npos) {  // net.ParseCIDR
      std::optional<Ip> net = parse_ip(std::string_view(p).substr(0, slash));
      std::string_view b = std::string_view(p).substr(slash + 1);
      if (net && !b.empty() && is_digits(b) && b.size() <= 3) {
        unsigned bits = static_cast<unsigned>(std::atoi(std::string(b).c_str()));
        if (bits <= net->size() * 8) {
          if (ip && prefix_equal(*ip, *net, bits)) return Match{entry, "CIDR"};
          continue;
        }
      }
    }
    // net.SplitHostPort: [v6]:port, or host:port with exactly one colon.
    std::string phost = p, pport;
    if (!p.empty() && p.front() == '[') {
      size_t close = p.find(']');
      if (close != std::string::npos && close + 1 < p.size() && p[close + 1] == ':' &&
          p.find(':', close + 2) == std::string::npos) {
        phost = p.substr(1, close - 1);
        pport = p.substr(close + 2);
      }
    } else if (size_t colon = p.find(':'); colon != std::string::npos && p.find(':', colon + 1) == std::string::npos) {
      phost = p.substr(0, colon);
      pport = p.substr(colon + 1);
    }
    if (phost.empty()) continue;  // malformed, skipped as Go skips it
    if (std::optional<Ip> pip = parse_ip(phost)) {
      if (ip && std::memcmp(ip->bytes, pip->bytes, 16) == 0 && ip->family == pip->family &&
          (pport.empty() || pport == port))
        return Match{entry, pport.empty() ? "exact" : "exact, port " + pport};
      continue;
    }
    if (ip) continue;  // name entries never match an IP host
    if (phost.starts_with("*.")) phost = phost.substr(1);
    const bool match_host = phost.front() != '.';
    if (match_host) phost = "." + phost;
    if (u.host.ends_with(phost) || (match_host && u.host == phost.substr(1))) {
      if (pport.empty() || pport == port)
        return Match{entry, std::string(u.host.ends_with(phost) ? "suffix" : "exact") +
                                (pport.empty() ? "" : ", port " + pport)};
    }
  }
  return std::nullopt;
}

// golang.org/x/net/http/httpproxy (net/http.ProxyFromEnvironment): HTTPS_PROXY else https_proxy for https://,
// HTTP_PROXY else http_proxy for http:// (upper-case first, empty counts as unset, no all_proxy); "localhost" and
// loopback addresses are never proxied; then NO_PROXY else no_proxy. websocket clients (gorilla, nhooyr) ask with
// ws/wss mapped to http/https. The CGI rule (REQUEST_METHOD refuses HTTP_PROXY) is not modelled.
ProxyDecision decide_go(const ProxyEnv& env, const Url& u) {
  const std::string up = upper(u.scheme + "_proxy"), lo = u.scheme + "_proxy";
  std::optional<Pick> pick;
  for (const std::string& v : {up, lo})
    if (const std::string* val = nonempty(env, v)) {
      pick = Pick{v, *val};
      break;
    }
  if (!pick) return direct(Client::go, none_set(Client::go, u, up + ", " + lo, env, {"all_proxy", "ALL_PROXY"}));
  if (u.host_raw == "localhost")
    return direct(Client::go, fmt::format("Go's net/http never proxies localhost (not {}={})", pick->var,
                                          value_shown(pick->value)));
  if (std::optional<Ip> ip = parse_ip(u.host); ip && ip->loopback())
    return direct(Client::go, fmt::format("{} is a loopback address, which Go's net/http never proxies (not {}={})",
                                          u.host, pick->var, value_shown(pick->value)));
  for (std::string_view nv : {"NO_PROXY", "no_proxy"})
    if (const std::string* list = nonempty(env, nv)) {
      if (auto m = go_no_proxy(u, *list)) return bypass(Client::go, std::string(nv), *m, u, *pick);
      break;
    }
  return use_proxy(Client::go, u, *pick, fmt::format("Go reads {}, else {}", up, lo));
}

// ---- conflicts ----

// The spelling of `base` (a lower-case name) that `c` reads in env, or "" for neither.
std::string spelling_read(Client c, const ProxyEnv& env, const std::string& base) {
  const std::string up = upper(base);
  auto first_nonempty = [&](const std::string& a, const std::string& b) -> std::string {
    if (nonempty(env, a)) return a;
    if (nonempty(env, b)) return b;
    return "";
  };
  auto python = [&]() -> std::string {
    if (find_var(env, base)) return base;
    return nonempty(env, up) ? up : "";
  };
  const bool grpc = c == Client::grpc || c == Client::ray;
  if (base == "http_proxy") {
    if (c == Client::curl) return nonempty(env, base) ? base : "";
    if (c == Client::urllib || c == Client::requests) return python();
    if (grpc) return find_var(env, base) ? base : "";
    return first_nonempty(up, base);
  }
  if (base == "https_proxy") {
    if (c == Client::curl) return first_nonempty(base, up);
    if (c == Client::urllib || c == Client::requests) return python();
    if (grpc) return find_var(env, base) ? base : "";
    return first_nonempty(up, base);
  }
  if (base == "all_proxy") {
    if (c == Client::curl) return first_nonempty(base, up);
    if (c == Client::requests) return python();
    return "";
  }
  if (base == "no_proxy") {
    if (c == Client::curl || c == Client::requests) return first_nonempty(base, up);
    if (c == Client::urllib) return python();
    if (grpc) return !find_var(env, "no_grpc_proxy") && find_var(env, base) ? base : "";
    return first_nonempty(up, base);
  }
  if (base == "ws_proxy" || base == "wss_proxy") return c == Client::curl ? first_nonempty(base, up) : "";
  if (base == "grpc_proxy" || base == "no_grpc_proxy") return grpc && find_var(env, base) ? base : "";
  return "";
}

std::string list_clients(const std::vector<std::string>& names) {
  if (names.size() <= 1) return names.empty() ? "" : names[0];
  std::vector<std::string> head(names.begin(), names.end() - 1);
  return join(head, ", ") + " and " + names.back();
}

}  // namespace proxy_rules

// Every variable read_proxy_env keeps: the ones some client reads, and the spellings none reads but users set
// (HTTP_PROXY for curl, GRPC_PROXY), so that a decision can say what it ignored.
const std::vector<std::string_view>& proxy_variable_names() {
  static constexpr std::string_view kNames =
      "http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY ws_proxy WS_PROXY wss_proxy WSS_PROXY "
      "grpc_proxy GRPC_PROXY no_proxy NO_PROXY no_grpc_proxy NO_GRPC_PROXY RAY_grpc_enable_http_proxy";
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (size_t at = 0, end = 0; at < kNames.size(); at = end + 1) {
      end = std::min(kNames.find(' ', at), kNames.size());
      out.push_back(kNames.substr(at, end - at));
    }
    return out;
  }();
  return names;
}

ProxyEnv read_proxy_env(const GetEnv& env) {
  ProxyEnv out;
  for (std::string_view name : proxy_variable_names())
    if (const char* v = env(std::string(name).c_str())) out.push_back({std::string(name), v});
  return out;
}

std::vector<std::string> conflicts(const ProxyEnv& env) {
  std::vector<std::string> out;
  for (std::string_view b :
       {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ws_proxy", "wss_proxy", "grpc_proxy", "no_grpc_proxy"}) {
    const std::string base(b), up = coldstart::upper(b);
    const std::string* lo_v = find_var(env, base);
    const std::string* up_v = find_var(env, up);
    if (!lo_v || !up_v || *lo_v == *up_v) continue;
    std::vector<std::string> reads_lo, reads_up, reads_none;
    for (Client c : kClients) {
      const std::string s = proxy_rules::spelling_read(c, env, base);
      (s == base ? reads_lo : s == up ? reads_up : reads_none).push_back(std::string(name(c)));
    }
    std::vector<std::string> parts;
    auto group = [&](const std::vector<std::string>& who, const std::string& what) {
      if (!who.empty())
        parts.push_back(proxy_rules::list_clients(who) + (who.size() == 1 ? " reads " : " read ") + what);
    };
    group(reads_lo, base);
    group(reads_up, up);
    group(reads_none, "neither");
    out.push_back(fmt::format("{}={} and {}={} differ: {}", base, proxy_rules::value_shown(*lo_v), up,
                              proxy_rules::value_shown(*up_v), join(parts, "; ")));
  }
  return out;
}

std::string ProxyEndpoint::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<ProxyEndpoint> parse_proxy(std::string_view value) {
  std::string_view v = proxy_rules::strip_space(value);
  if (v.empty()) return std::nullopt;
  ProxyEndpoint ep;
  ep.scheme = "http";
  if (size_t sep = v.find("://"); sep != std::string_view::npos) {
    std::string_view scheme = v.substr(0, sep);
    if (scheme.empty() || !std::isalpha(static_cast<unsigned char>(scheme.front()))) return std::nullopt;
    for (char ch : scheme)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '+' && ch != '-' && ch != '.') return std::nullopt;
    ep.scheme = coldstart::lower(scheme);
    v.remove_prefix(sep + 3);
  }
  std::string_view auth = v.substr(0, v.find_first_of("/?#"));
  if (size_t at = auth.rfind('@'); at != std::string_view::npos) auth.remove_prefix(at + 1);
  std::string_view port_text;
  if (!auth.empty() && auth.front() == '[') {
    size_t close = auth.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    ep.host = std::string(auth.substr(1, close - 1));
    std::string_view rest = auth.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
    }
    if (!proxy_rules::parse_ip(ep.host) || ep.host.find(':') == std::string::npos) return std::nullopt;
  } else {
    size_t colon = auth.find(':');
    if (colon != std::string_view::npos && auth.find(':', colon + 1) != std::string_view::npos)
      return std::nullopt;  // an IPv6 address needs brackets
    ep.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) port_text = auth.substr(colon + 1);
  }
  if (ep.host.empty()) return std::nullopt;
  if (!port_text.empty()) {
    if (!proxy_rules::is_digits(port_text) || port_text.size() > 5) return std::nullopt;
    int port = std::atoi(std::string(port_text).c_str());
    if (port < 1 || port > 65535) return std::nullopt;
    ep.port = static_cast<uint16_t>(port);
    ep.port_given = true;
  } else {
    ep.port = ep.scheme == "https" ? 443 : 1080;  // curl's defaults (CURLOPT_PROXY)
  }
  return ep;
}

ProxyDecision decide(Client c, const ProxyEnv& env, const Target& t) {
  const proxy_rules::Url u = proxy_rules::url_for(c, t);
  switch (c) {
    case Client::curl: return proxy_rules::decide_curl(env, u);
    case Client::urllib: return proxy_rules::decide_urllib(env, u);
    case Client::requests: return proxy_rules::decide_requests(env, u);
    case Client::grpc: return proxy_rules::decide_grpc(Client::grpc, env, u);
    case Client::ray: return proxy_rules::decide_ray(env, u);
    case Client::go: return proxy_rules::decide_go(env, u);
  }
  return proxy_rules::direct(c, "unknown client");
}

}  // namespace coldstart::net
