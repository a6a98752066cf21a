#include "net/target.h"

#include <arpa/inet.h>

#include <cctype>
#include <optional>

#include "net/proxy.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::net {
// Not an anonymous namespace: a unity build puts src/net's files into one translation unit, where two files'
// anonymous helpers of one name would collide.
namespace target_rules {

constexpr std::string_view kForms =
    "give a URL (https://HOST[:PORT]/, wss://, http://, ws://, grpc://HOST:PORT) or HOST:PORT ([::1]:PORT for IPv6)";
constexpr size_t kMaxTarget = 4096;  // bytes of a whole target
constexpr size_t kMaxHost = 253;     // a DNS name's longest text

uint16_t default_port(std::string_view scheme) {
  if (scheme == "http" || scheme == "ws") return 80;
  return 443;  // https, wss, and gRPC's own default
}

bool host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'; }

// A control character at i (C0, DEL, or a C1 control in UTF-8): its length in bytes, else 0.
size_t control_at(std::string_view s, size_t i) {
  const auto u = static_cast<unsigned char>(s[i]);
  if (u < 0x20 || u == 0x7f) return 1;
  if (u == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
      static_cast<unsigned char>(s[i + 1]) <= 0x9f)
    return 2;
  return 0;
}

// The first control character in s, as shown() writes it ("\n", "\x1b"), or nothing.
std::optional<std::string> first_control(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (size_t n = control_at(s, i)) return shown(s.substr(i, n));
  return std::nullopt;
}

bool is_ipv6(std::string_view s) {
  if (s.empty() || s.size() >= INET6_ADDRSTRLEN) return false;
  const std::string z(s);
  in6_addr a;
  return inet_pton(AF_INET6, z.c_str(), &a) == 1;
}

bool is_ipv4(std::string_view s) {
  if (s.empty() || s.size() >= INET_ADDRSTRLEN) return false;
  const std::string z(s);
  in_addr a;
  return inet_pton(AF_INET, z.c_str(), &a) == 1;
}

// A user's part of the target inside a message: quoted, one line, short.
std::string part(std::string_view s) { return "'" + shown(s, 64) + "'"; }

// Why `digits` is no port ("" when it is one); the port in *port.
std::string port_problem(std::string_view digits, uint16_t* port) {
  if (digits.empty()) return "no port after ':'";
  unsigned long v = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return "port " + part(digits) + " is not a number from 1 to 65535";
    v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v > 65535) return "port " + part(digits) + " is not 1 to 65535";
  }
  if (v == 0) return "port " + part(digits) + " is not 1 to 65535";
  *port = static_cast<uint16_t>(v);
  return "";
}

// Why a host name or bracketed address (brackets removed: `bracketed`) is not one ("" when it is).
std::string host_problem(std::string_view host, bool bracketed) {
  if (bracketed) {
    if (host.empty()) return "empty brackets: no IPv6 address in them";
    if (size_t pct = host.find('%'); pct != std::string_view::npos) {
      if (pct + 1 == host.size()) return "an empty zone id after '%' in " + part(host);
      return part(host) + " has a zone id (" + part(host.substr(pct)) +
             "), which doctor net does not take (write the address without it)";
    }
    if (is_ipv4(host)) return part(host) + " is an IPv4 address: write it without brackets";
    if (!is_ipv6(host)) return part(host) + " is not an IPv6 address";
    return "";
  }
  if (host.empty()) return "no host";
  if (host.size() > kMaxHost)
    return "a host name of " + std::to_string(host.size()) + " bytes (at most " + std::to_string(kMaxHost) + ")";
  for (char c : host)
    if (!host_char(c)) return part(host) + " is not a host name or address (letters, digits, '.', '-', '_')";
  return "";
}

struct Authority {
  std::string host;
  uint16_t port = 0;  // 0 when none was written
};

// HOST[:PORT] or [V6][:PORT]: why it is not one ("" when it is), the parts in *out.
std::string authority_problem(std::string_view auth, bool port_required, Authority* out) {
  std::string_view host, rest;
  bool bracketed = false;
  if (!auth.empty() && auth.front() == '[') {
    const size_t close = auth.find(']');
    if (close == std::string_view::npos) return "an unclosed '[' in the host";
    host = auth.substr(1, close - 1);
    rest = auth.substr(close + 1);
    bracketed = true;
    if (host.find('[') != std::string_view::npos) return "an unbalanced '[' in the host";
  } else {
    if (auth.find_first_of("[]") != std::string_view::npos)
      return "an unbalanced bracket in the host: an IPv6 address goes as [ADDRESS]:PORT";
    const size_t colon = auth.find(':');
    if (colon != std::string_view::npos && auth.find(':', colon + 1) != std::string_view::npos) {
      const size_t last = auth.rfind(':');
      if (is_ipv6(auth.substr(0, last)))
        return "an IPv6 address needs brackets, e.g. [" + shown(auth.substr(0, last), 64) + "]" +
               shown(auth.substr(last), 8);
      if (is_ipv6(auth)) return "an IPv6 address needs brackets and a port, e.g. [" + shown(auth, 64) + "]:PORT";
      return part(auth) + " is not HOST:PORT (more than one ':'; an IPv6 address goes as [ADDRESS]:PORT)";
    }
    host = auth.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : auth.substr(colon);
  }
  if (std::string p = host_problem(host, bracketed); !p.empty()) return p;
  out->host = std::string(host);
  out->port = 0;
  if (!rest.empty()) {
    if (rest.front() != ':') return "unexpected " + part(rest) + " after the host";
    if (std::string p = port_problem(rest.substr(1), &out->port); !p.empty()) return p;
  } else if (port_required) {
    return "no port";
  }
  return "";
}

// Why `text` is no target ("" when it is one, then in *t).
std::string target_problem(std::string_view s, Target* t) {
  if (s.empty()) return "an empty target";
  if (s.size() > kMaxTarget)
    return "a target of " + std::to_string(s.size()) + " bytes (at most " + std::to_string(kMaxTarget) + ")";
  if (auto c = first_control(s)) return "a control character (" + *c + ")";
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c))) return "a space";
  Authority a;
  const size_t sep = s.find("://");
  if (sep != std::string_view::npos) {
    const std::string scheme = coldstart::lower(s.substr(0, sep));
    if (scheme != "https" && scheme != "wss" && scheme != "http" && scheme != "ws" && scheme != "grpc")
      return "unknown scheme " + part(scheme);
    std::string_view rest = s.substr(sep + 3);
    const size_t slash = rest.find_first_of("/?#");
    std::string_view auth = rest.substr(0, slash);
    if (const size_t at = auth.rfind('@'); at != std::string_view::npos) auth = auth.substr(at + 1);  // credentials
    if (std::string p = authority_problem(auth, false, &a); !p.empty()) return p;
    t->scheme = scheme;
    t->path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
    if (t->path.front() != '/') t->path = "/" + t->path;
    t->host = a.host;
    t->port = a.port ? a.port : default_port(t->scheme);
    return "";
  }
  if (s.find('/') != std::string_view::npos) return "a path without a scheme";
  if (std::string p = authority_problem(s, true, &a); !p.empty()) return p;
  t->host = a.host;
  t->port = a.port;
  return "";
}

// What doctor net reads from the environment, and what to set each to.
struct EnvVar {
  std::string_view name, fix;
  bool secret = false;  // its value is never shown
};

constexpr std::string_view kProxyFix = "give http://HOST:PORT, or unset it";
constexpr std::string_view kNoProxyFix =
    "give a comma-separated list of hosts, domains and CIDR blocks (localhost,.corp,10.0.0.0/8), or unset it";
constexpr std::string_view kLauncherFix = "check the launcher's environment";

const std::vector<EnvVar>& env_vars(bool peers) {
  static const std::vector<EnvVar> job = [] {
    std::vector<EnvVar> v = {
        {"MASTER_ADDR", "set MASTER_ADDR to the rendezvous host's name or address"},
        {"MASTER_PORT", "set MASTER_PORT to a port from 1 to 65535 (torchrun's default: 29500)"},
        {"RAY_ADDRESS", "set RAY_ADDRESS to HOST:PORT (the GCS), ray://HOST:PORT or auto"},
        {"NCCL_SOCKET_IFNAME", "give interface names or prefixes as NCCL takes them (eth0, ^docker,lo, =eth0)"},
        {"NCCL_SOCKET_FAMILY", "give AF_INET or AF_INET6, or unset it"},
        {"NCCL_COMM_ID", "give <address>:<port>, or unset it"},
        {"GLOO_SOCKET_IFNAME", "give exact interface names, comma-separated (eth0)"},
    };
    for (std::string_view n : proxy_variable_names())
      v.push_back({n, n.starts_with("no_") || n.starts_with("NO_") ? kNoProxyFix
                      : n == "RAY_grpc_enable_http_proxy"          ? std::string_view("set it to 1 or 0, or unset it")
                                                                   : kProxyFix});
    return v;
  }();
  static const std::vector<EnvVar> with_peers = [] {
    std::vector<EnvVar> v = job;
    v.push_back({"COLDSTART_COORD_PORT", "set COLDSTART_COORD_PORT to a port from 1 to 65535, the same on every rank"});
    v.push_back({"COLDSTART_TOKEN", "set COLDSTART_TOKEN to the same word on every rank", true});
    for (std::string_view n : {"RANK",
                               "WORLD_SIZE",
                               "LOCAL_RANK",
                               "LOCAL_WORLD_SIZE",
                               "TORCHELASTIC_RUN_ID",
                               "OMPI_COMM_WORLD_RANK",
                               "OMPI_COMM_WORLD_SIZE",
                               "OMPI_COMM_WORLD_LOCAL_RANK",
                               "OMPI_COMM_WORLD_LOCAL_SIZE",
                               "OMPI_MCA_ess_base_jobid",
                               "OMPI_MCA_orte_ess_jobid",
                               "PMIX_NAMESPACE",
                               "PMI_RANK",
                               "PMI_SIZE",
                               "MPI_LOCALRANKID",
                               "MPI_LOCALNRANKS",
                               "PMI_PORT",
                               "SLURM_PROCID",
                               "SLURM_NTASKS",
                               "SLURM_LOCALID",
                               "SLURM_JOB_ID",
                               "SLURM_STEP_ID",
                               "SLURM_STEP_NODELIST",
                               "SLURM_JOB_NODELIST",
                               "RAY_JOB_ID",
                               "RAY_NODE_ID"})
      v.push_back({n, kLauncherFix});
    return v;
  }();
  return peers ? with_peers : job;
}

// NAME=VALUE for a message: one line, at most 200 bytes of the value, a URL's password hidden.
std::string var_shown(std::string_view name, std::string_view value) {
  return std::string(name) + "=" + (value.empty() ? std::string("''") : shown(without_password(value)));
}

}  // namespace target_rules

Target parse_target(std::string_view text, std::string origin) {
  Target t;
  t.text = std::string(trim(text));
  t.origin = std::move(origin);
  // Control characters are refused before the ends are trimmed: "HOST:PORT\n" is no target either.
  const auto control = target_rules::first_control(text);
  std::string p = control ? "a control character (" + *control + ")" : target_rules::target_problem(t.text, &t);
  if (!p.empty()) {
    if (p == "an empty target") throw InputError(p + "; " + std::string(target_rules::kForms));
    throw InputError("target " + shown(without_password(text)) + ": " + p + "; " + std::string(target_rules::kForms));
  }
  return t;
}

std::vector<std::string_view> env_variables_read(bool peers) {
  std::vector<std::string_view> out;
  for (const auto& v : target_rules::env_vars(peers)) out.push_back(v.name);
  return out;
}

void check_environment(const GetEnv& env, bool peers) {
  for (const target_rules::EnvVar& v : target_rules::env_vars(peers)) {
    const std::string name(v.name);
    const char* value = env(name.c_str());
    if (!value) continue;
    if (auto c = target_rules::first_control(value))
      throw InputError((v.secret ? name + " holds" : target_rules::var_shown(name, value) + ": the value holds") +
                       " a control character (" + *c + "); " + std::string(v.fix));
  }
}

std::vector<Target> env_targets(const GetEnv& env) {
  check_environment(env);
  std::vector<Target> out;
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? std::string(trim(v)) : std::string();
  };
  // `text` is the target the variable names; a problem is reported with the variable's own value.
  auto add = [&](const std::string& text, const char* var, const std::string& fix) {
    Target t;
    t.text = text;
    t.origin = var;
    if (std::string p = target_rules::target_problem(text, &t); !p.empty())
      throw InputError(target_rules::var_shown(var, get(var)) + ": " + p + "; " + fix);
    for (const Target& seen : out)
      if (seen.host == t.host && seen.port == t.port && seen.scheme == t.scheme) return;
    out.push_back(std::move(t));
  };
  if (std::string addr = get("MASTER_ADDR"); !addr.empty()) {
    const std::string fix = "set MASTER_ADDR to a host name or address and MASTER_PORT to a port";
    std::string port = get("MASTER_PORT");
    if (port.empty()) port = "29500";
    uint16_t p = 0;
    if (std::string problem = target_rules::port_problem(port, &p); !problem.empty())
      throw InputError(target_rules::var_shown("MASTER_PORT", get("MASTER_PORT")) + ": " + problem +
                       "; set MASTER_PORT to a port from 1 to 65535 (torchrun's default: 29500)");
    const bool bracketed = addr.size() >= 2 && addr.front() == '[' && addr.back() == ']';
    const std::string host = bracketed ? addr.substr(1, addr.size() - 2) : addr;
    const bool v6 = bracketed || host.find(':') != std::string::npos;
    if (v6 && !bracketed && !target_rules::is_ipv6(host) && host.find('%') == std::string::npos)
      throw InputError(
          target_rules::var_shown("MASTER_ADDR", addr) +
          ": not a host name or address (a port goes in MASTER_PORT; an IPv6 address is taken as it is); " + fix);
    if (std::string problem = target_rules::host_problem(host, v6); !problem.empty())
      throw InputError(target_rules::var_shown("MASTER_ADDR", addr) + ": " + problem + "; " + fix);
    add((v6 ? "[" + host + "]" : host) + ":" + port, "MASTER_ADDR", fix);
  }
  if (std::string ray = get("RAY_ADDRESS"); !ray.empty() && ray != "auto" && ray != "local") {
    const std::string fix = "RAY_ADDRESS takes HOST:PORT (the GCS), ray://HOST:PORT or a dashboard URL";
    if (ray.starts_with("ray://")) ray = ray.substr(6);
    if (ray.starts_with("http://") || ray.starts_with("https://")) {
      add(ray, "RAY_ADDRESS", fix);
    } else {
      if (const size_t sep = ray.find("://"); sep != std::string::npos)
        throw InputError(target_rules::var_shown("RAY_ADDRESS", get("RAY_ADDRESS")) + ": unknown scheme " +
                         target_rules::part(ray.substr(0, sep)) + "; " + fix);
      // The GCS's default port when none is written (after an IPv6 address's brackets).
      const size_t close = ray.front() == '[' ? ray.find(']') : 0;
      const std::string_view after =
          close == std::string::npos ? std::string_view() : std::string_view(ray).substr(close);
      if (close != std::string::npos && after.find(':') == std::string_view::npos) ray += ":6379";
      add("grpc://" + ray, "RAY_ADDRESS", fix);
    }
  }
  for (const char* name :
       {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "grpc_proxy"}) {
    std::string value = get(name);
    if (value.empty()) continue;
    auto p = parse_proxy(value);
    if (!p)
      throw InputError(target_rules::var_shown(name, value) +
                       ": not a proxy address; give http://HOST:PORT (or HOST:PORT), or unset it");
    const std::string host = p->host.find(':') != std::string::npos ? "[" + p->host + "]" : p->host;
    add(host + ":" + std::to_string(p->port), name, "give http://HOST:PORT (or HOST:PORT), or unset it");
  }
  return out;
}

}  // namespace coldstart::net
