#include "net/target.h"

#include <cctype>

#include "net/proxy.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

constexpr std::string_view kForms =
    "give a URL (https://HOST[:PORT]/, wss://, http://, ws://, grpc://HOST:PORT) or HOST:PORT ([::1]:PORT for IPv6)";

uint16_t default_port(std::string_view scheme) {
  if (scheme == "http" || scheme == "ws") return 80;
  return 443;  // https, wss, and gRPC's own default
}

bool host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'; }

// HOST[:PORT] or [V6][:PORT]; port 0 when none was written. Throws InputError naming `text`.
std::pair<std::string, uint16_t> split_authority(std::string_view auth, std::string_view text, bool port_required) {
  std::string host;
  std::string_view rest;
  if (!auth.empty() && auth.front() == '[') {
    auto close = auth.find(']');
    if (close == std::string_view::npos)
      throw InputError(std::string(text) + ": an unclosed '[' in the host; " + std::string(kForms));
    host = std::string(auth.substr(1, close - 1));
    rest = auth.substr(close + 1);
    for (char c : host)
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.')
        throw InputError(std::string(text) + ": '" + host + "' is not an IPv6 address; " + std::string(kForms));
  } else {
    auto colon = auth.find(':');
    if (colon != std::string_view::npos && auth.find(':', colon + 1) != std::string_view::npos)
      throw InputError(std::string(text) + ": an IPv6 address needs brackets, e.g. [" +
                       std::string(auth.substr(0, auth.rfind(':'))) + "]" + std::string(auth.substr(auth.rfind(':'))));
    host = std::string(auth.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : auth.substr(colon);
    for (char c : host)
      if (!host_char(c))
        throw InputError(std::string(text) + ": '" + host + "' is not a host name or address; " + std::string(kForms));
  }
  if (host.empty()) throw InputError(std::string(text) + ": no host; " + std::string(kForms));
  uint16_t port = 0;
  if (!rest.empty()) {
    if (rest.front() != ':')
      throw InputError(std::string(text) + ": unexpected '" + std::string(rest) + "' after the host; " +
                       std::string(kForms));
    auto p = parse_int(rest.substr(1));
    if (!p || *p < 1 || *p > 65535)
      throw InputError(std::string(text) + ": port '" + std::string(rest.substr(1)) + "' is not 1 to 65535");
    port = static_cast<uint16_t>(*p);
  } else if (port_required) {
    throw InputError(std::string(text) + ": no port; " + std::string(kForms));
  }
  return {host, port};
}

}  // namespace

std::string Target::url_text() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (!url()) return "http://" + h + ":" + std::to_string(port) + "/";
  return scheme + "://" + h + ":" + std::to_string(port) + (path.empty() ? "/" : path);
}

Target parse_target(std::string_view text, std::string origin) {
  Target t;
  t.text = std::string(trim(text));
  t.origin = std::move(origin);
  std::string_view s = t.text;
  if (s.empty()) throw InputError("an empty target; " + std::string(kForms));
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c)) || !std::isprint(static_cast<unsigned char>(c)))
      throw InputError("target '" + t.text + "': spaces or control characters; " + std::string(kForms));
  auto sep = s.find("://");
  if (sep != std::string_view::npos) {
    std::string scheme(s.substr(0, sep));
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme != "https" && scheme != "wss" && scheme != "http" && scheme != "ws" && scheme != "grpc")
      throw InputError("target " + t.text + ": unknown scheme '" + scheme + "'; " + std::string(kForms));
    t.scheme = scheme;
    std::string_view rest = s.substr(sep + 3);
    auto slash = rest.find_first_of("/?#");
    std::string_view auth = rest.substr(0, slash);
    t.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
    if (t.path.front() != '/') t.path = "/" + t.path;
    if (auto at = auth.rfind('@'); at != std::string_view::npos) auth = auth.substr(at + 1);  // credentials: not ours
    auto [host, port] = split_authority(auth, t.text, false);
    t.host = host;
    t.port = port ? port : default_port(t.scheme);
    return t;
  }
  if (s.find('/') != std::string_view::npos)
    throw InputError("target " + t.text + ": a path without a scheme; " + std::string(kForms));
  auto [host, port] = split_authority(s, t.text, true);
  t.host = host;
  t.port = port;
  return t;
}

std::vector<Target> env_targets(const GetEnv& env) {
  std::vector<Target> out;
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? std::string(trim(v)) : std::string();
  };
  auto add = [&](const std::string& text, const std::string& origin, const std::string& fix) {
    try {
      Target t = parse_target(text, origin);
      for (const Target& seen : out)
        if (seen.host == t.host && seen.port == t.port && seen.scheme == t.scheme) return;
      out.push_back(std::move(t));
    } catch (const InputError& e) {
      throw InputError(origin + "=" + text + ": " + e.what() + "; " + fix);
    }
  };
  if (std::string addr = get("MASTER_ADDR"); !addr.empty()) {
    std::string port = get("MASTER_PORT");
    if (port.empty()) port = "29500";
    const std::string host = addr.find(':') != std::string::npos && addr.front() != '[' ? "[" + addr + "]" : addr;
    add(host + ":" + port, "MASTER_ADDR", "set MASTER_ADDR to a host and MASTER_PORT to a port");
  }
  if (std::string ray = get("RAY_ADDRESS"); !ray.empty() && ray != "auto" && ray != "local") {
    if (ray.starts_with("ray://")) ray = ray.substr(6);
    if (ray.starts_with("http://") || ray.starts_with("https://")) {
      add(ray, "RAY_ADDRESS", "RAY_ADDRESS takes HOST:PORT (the GCS), ray://HOST:PORT or a dashboard URL");
    } else {
      if (ray.find(':') == std::string::npos) ray += ":6379";  // the GCS's default port
      add("grpc://" + ray, "RAY_ADDRESS", "RAY_ADDRESS takes HOST:PORT (the GCS) or ray://HOST:PORT");
    }
  }
  for (const char* name :
       {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "grpc_proxy"}) {
    std::string value = get(name);
    if (value.empty()) continue;
    auto p = parse_proxy(value);
    if (!p)
      throw InputError(std::string(name) + "=" + without_password(value) +
                       ": not a proxy address; give http://HOST:PORT");
    const std::string host = p->host.find(':') != std::string::npos ? "[" + p->host + "]" : p->host;
    add(host + ":" + std::to_string(p->port), name, "give http://HOST:PORT");
  }
  return out;
}

}  // namespace coldstart::net
