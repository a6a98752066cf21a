// libFuzzer target for what doctor net reads before it probes anything, its first byte picking which:
//   0: a TARGET argument (parse_target);
//   1: the environment: a target argument, then variables ('\0'-separated, each a byte naming one of the variables
//      doctor net reads and its value), through check_environment, env_targets and every client's proxy decision
//      (each no_proxy matcher) for every target;
//   2: a proxy variable's value (parse_proxy).
// A refusal must be one InputError line (no control character, bounded whatever the input's length); what is accepted
// must be what the parser promises (a host name or an IPv6 address inet_pton takes, a port from 1 to 65535) and read
// back the same from its own text; a decision must be one bounded line. Anything else, or anything else escaping, is
// a finding (std::abort).
#include <arpa/inet.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "net/proxy.h"
#include "net/target.h"
#include "util/error.h"

namespace {

using coldstart::InputError;
using coldstart::net::Target;

bool has_control(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x20 || u == 0x7f) return true;
    if (u == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      return true;
  }
  return false;
}

// A message or a decision: one line, non-empty, at most `max` bytes.
void one_line(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || has_control(s)) std::abort();
}

bool ipv6(const std::string& s) {
  in6_addr a;
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// What parse_target promises of a target it took, and that the target reads back the same from its own text.
void accepted(const Target& t) {
  if (t.text.empty() || t.text.size() > 4096 || has_control(t.text)) std::abort();
  for (char c : t.text)
    if (std::isspace(static_cast<unsigned char>(c))) std::abort();
  if (t.host.empty() || t.port == 0) std::abort();
  const bool v6 = t.host.find(':') != std::string::npos;
  if (v6 && !ipv6(t.host)) std::abort();
  if (!v6) {
    if (t.host.size() > 253) std::abort();
    for (char c : t.host)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') std::abort();
  }
  if (t.url()) {
    if (t.scheme != "https" && t.scheme != "wss" && t.scheme != "http" && t.scheme != "ws" && t.scheme != "grpc")
      std::abort();
    if (t.path.empty() || t.path.front() != '/') std::abort();
  } else if (!t.path.empty()) {
    std::abort();
  }
  const std::string host = v6 ? "[" + t.host + "]" : t.host;
  const std::string again = t.url() ? t.url_text() : host + ":" + std::to_string(t.port);
  Target u;
  try {
    u = coldstart::net::parse_target(again, t.origin);
  } catch (const InputError&) {
    std::abort();  // a target's own text refused
  }
  if (u.scheme != t.scheme || u.host != t.host || u.port != t.port || u.path != t.path) std::abort();
}

void target(std::string_view text) {
  Target t;
  try {
    t = coldstart::net::parse_target(text);
  } catch (const InputError& e) {
    one_line(e.what(), 1200);
    return;
  }
  accepted(t);
}

void proxy_value(std::string_view value) {
  const auto p = coldstart::net::parse_proxy(value);
  (void)coldstart::net::without_password(value);
  if (!p) return;
  if (p->host.empty() || p->port == 0 || p->scheme.empty()) std::abort();
  if (p->host.find(':') != std::string::npos && !ipv6(p->host)) std::abort();
  const auto again = coldstart::net::parse_proxy(p->text());
  if (!again || again->scheme != p->scheme || again->host != p->host || again->port != p->port || !again->port_given)
    std::abort();
}

void environment(std::string_view rest) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t nul = rest.find('\0', start);
    parts.push_back(rest.substr(start, nul == std::string_view::npos ? std::string_view::npos : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  const std::vector<std::string_view> names = coldstart::net::env_variables_read(true);
  std::map<std::string, std::string> vars;
  for (size_t i = 1; i < parts.size(); ++i)
    if (!parts[i].empty())
      vars[std::string(names[static_cast<unsigned char>(parts[i][0]) % names.size()])] =
          std::string(parts[i].substr(1));
  const coldstart::net::GetEnv env = [&vars](const char* k) -> const char* {
    auto it = vars.find(k);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  for (const auto& [name, value] : vars) proxy_value(value);
  try {
    coldstart::net::check_environment(env, true);
  } catch (const InputError& e) {
    one_line(e.what(), 1200);
    for (const auto& [name, value] : vars)  // it names a variable that holds a control character
      if (std::string_view(e.what()).starts_with(name) && has_control(value)) return;
    std::abort();
  }
  std::vector<Target> targets;
  try {
    targets = coldstart::net::env_targets(env);
  } catch (const InputError& e) {
    one_line(e.what(), 1200);
    bool named = false;  // it names one of the variables env_targets reads
    for (const char* v : {"MASTER_ADDR", "MASTER_PORT", "RAY_ADDRESS", "https_proxy", "HTTPS_PROXY", "http_proxy",
                          "HTTP_PROXY", "all_proxy", "ALL_PROXY", "grpc_proxy"})
      named |= std::string_view(e.what()).starts_with(std::string(v) + "=") && vars.count(v);
    if (!named) std::abort();
  }
  for (const Target& t : targets) accepted(t);
  try {
    targets.push_back(coldstart::net::parse_target(parts[0]));
  } catch (const InputError&) {
  }
  const coldstart::net::ProxyEnv penv = coldstart::net::read_proxy_env(env);
  for (const std::string& line : coldstart::net::conflicts(penv)) one_line(line, 4096);
  for (const Target& t : targets)
    for (coldstart::net::Client c : coldstart::net::kClients) {
      const coldstart::net::ProxyDecision d = coldstart::net::decide(c, penv, t);
      one_line(d.why, 4096);
      if (d.proxied && !d.proxy) std::abort();
      if (d.proxy && (d.proxy->host.empty() || d.proxy->port == 0)) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: target(rest); break;
      case 1: environment(rest); break;
      default: proxy_value(rest); break;
    }
  } catch (const InputError&) {
    std::abort();  // every refusal above is caught where it is checked
  }
  return 0;
}
