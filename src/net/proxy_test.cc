// The proxy rules as one table, tests/net/proxy_table.json: variable sets x targets x clients. The same table is run
// against the installed curl, urllib and requests by tests/net/test_proxy_clients.py, so that decide() and the real
// clients are held to one set of answers.
#include "net/proxy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace coldstart::net {
namespace proxy_table_test {  // not anonymous: a unity build merges the test files
namespace {

struct Case {
  std::string name;
  std::vector<std::pair<std::string, std::string>> env;
  std::string target;
  std::map<std::string, std::string> expect, endpoint, why;
};

// What an "expect" string says: via:VAR, bypass:VAR, fails:VAR, ignored:VAR or direct.
struct Expect {
  bool proxied = false, unsupported = false;
  std::string variable;
};

std::optional<Expect> parse_expect(const std::string& s) {
  if (s == "direct") return Expect{};
  size_t colon = s.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string kind = s.substr(0, colon), var = s.substr(colon + 1);
  if (kind == "via") return Expect{true, false, var};
  if (kind == "bypass") return Expect{false, false, var};
  if (kind == "fails") return Expect{true, true, var};
  if (kind == "ignored") return Expect{false, true, var};
  return std::nullopt;
}

const std::string kTable = std::string(COLDSTART_SOURCE_DIR) + "/tests/net/proxy_table.json";

std::vector<Case> load_cases() {
  std::ifstream in(kTable);
  if (!in) return {};
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("cases")) return {};
  std::vector<Case> out;
  for (const auto& j : doc["cases"]) {
    Case c;
    c.name = j.value("name", "");
    c.target = j.value("target", "");
    for (const auto& [k, v] : j["env"].items()) c.env.emplace_back(k, v.get<std::string>());
    for (const char* field : {"expect", "endpoint", "why"}) {
      if (!j.contains(field)) continue;
      auto& dst = std::string(field) == "expect" ? c.expect : std::string(field) == "endpoint" ? c.endpoint : c.why;
      for (const auto& [k, v] : j[field].items()) dst[k] = v.get<std::string>();
    }
    out.push_back(std::move(c));
  }
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = load_cases();
  return all;
}

// The table's targets, as parse_target would make them (written here so that this test does not depend on it):
// SCHEME://HOST[:PORT]/PATH or HOST:PORT, IPv6 in brackets.
Target target_of(const std::string& text) {
  Target t;
  t.text = text;
  std::string_view rest = text;
  if (size_t sep = rest.find("://"); sep != std::string_view::npos) {
    t.scheme = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 3);
  }
  std::string_view auth = rest.substr(0, rest.find('/'));
  if (t.url()) t.path = auth.size() < rest.size() ? std::string(rest.substr(auth.size())) : "/";
  std::string_view port;
  if (!auth.empty() && auth.front() == '[') {
    size_t close = auth.find(']');
    t.host = std::string(auth.substr(1, close - 1));
    if (close + 1 < auth.size()) port = auth.substr(close + 2);
  } else {
    size_t colon = auth.rfind(':');
    t.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) port = auth.substr(colon + 1);
  }
  if (!port.empty())
    t.port = static_cast<uint16_t>(std::stoi(std::string(port)));
  else
    t.port = t.scheme == "http" || t.scheme == "ws" ? 80 : 443;
  return t;
}

ProxyEnv proxy_env_of(const Case& c) {
  ProxyEnv env;
  for (const auto& [k, v] : c.env) env.push_back({k, v});
  return env;
}

std::optional<Client> client_named(const std::string& s) {
  for (Client c : kClients)
    if (name(c) == s) return c;
  return std::nullopt;
}

TEST(ProxyTable, Loads) {
  ASSERT_FALSE(cases().empty()) << "cannot read " << kTable;
  for (const Case& c : cases()) {
    EXPECT_EQ(c.expect.size(), std::size(kClients)) << c.name << ": every case names all six clients";
    for (const auto& [client, e] : c.expect) {
      EXPECT_TRUE(client_named(client)) << c.name << ": unknown client " << client;
      EXPECT_TRUE(parse_expect(e)) << c.name << ": bad expectation " << e;
    }
  }
}

class ProxyCase : public ::testing::TestWithParam<size_t> {};

TEST_P(ProxyCase, EachClientDecidesAsItsSourceDoes) {
  const Case& c = cases()[GetParam()];
  const ProxyEnv env = proxy_env_of(c);
  const Target t = target_of(c.target);
  for (Client client : kClients) {
    const ProxyDecision d = decide(client, env, t);
    const std::string who = std::string(name(client));
    SCOPED_TRACE(c.name + " / " + who + " / " + c.target + ": " + d.why);
    EXPECT_EQ(d.client, client);
    EXPECT_FALSE(d.why.empty());
    EXPECT_EQ(d.why.find('\n'), std::string::npos) << "why is one line";
    for (const auto& [k, v] : c.env) {
      if (v.find("s3cret") != std::string::npos) {
        EXPECT_EQ(d.why.find("s3cret"), std::string::npos);
      }
    }
    auto it = c.expect.find(who);
    if (it == c.expect.end()) continue;
    const std::optional<Expect> e = parse_expect(it->second);
    ASSERT_TRUE(e);
    EXPECT_EQ(d.proxied, e->proxied) << "expected " << it->second;
    EXPECT_EQ(d.unsupported, e->unsupported) << "expected " << it->second;
    EXPECT_EQ(d.variable, e->variable) << "expected " << it->second;
    if (d.proxied) {
      EXPECT_TRUE(d.proxy.has_value());
    }
    if (auto ep = c.endpoint.find(who); ep != c.endpoint.end()) {
      ASSERT_TRUE(d.proxy.has_value());
      EXPECT_EQ(d.proxy->text(), ep->second);
    }
    if (auto w = c.why.find(who); w != c.why.end()) {
      EXPECT_NE(d.why.find(w->second), std::string::npos) << w->second;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string out;
  for (char ch : cases()[info.param].name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return std::to_string(info.param) + "_" + out;
}

INSTANTIATE_TEST_SUITE_P(Table, ProxyCase, ::testing::Range<size_t>(0, cases().size()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ProxyCase);

TEST(ParseProxy, FormsAndCurlDefaults) {
  struct Row {
    const char* text;
    const char* scheme;
    const char* host;
    uint16_t port;
    bool port_given;
  };
  const Row rows[] = {
      {"http://user:pw@proxy.corp:3128/", "http", "proxy.corp", 3128, true},
      {"proxy.corp:3128", "http", "proxy.corp", 3128, true},
      {"[::1]:3128", "http", "::1", 3128, true},
      {"socks5h://h:1080", "socks5h", "h", 1080, true},
      {"http://proxy.corp", "http", "proxy.corp", 1080, false},
      {"https://proxy.corp", "https", "proxy.corp", 443, false},
      {"socks5://proxy.corp", "socks5", "proxy.corp", 1080, false},
      {"HTTP://Proxy.Corp:8080", "http", "Proxy.Corp", 8080, true},
      {"  http://127.0.0.1:7890  ", "http", "127.0.0.1", 7890, true},
      {"http://[fd00::1]/", "http", "fd00::1", 1080, false},
      {"u@h:1", "http", "h", 1, true},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.text);
    auto p = parse_proxy(r.text);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->scheme, r.scheme);
    EXPECT_EQ(p->host, r.host);
    EXPECT_EQ(p->port, r.port);
    EXPECT_EQ(p->port_given, r.port_given);
  }
  for (const char* bad : {"", "   ", "http://", "::1:3128", "host:0", "host:65536", "host:12ab", "[::1", "[nothost]:1",
                          "http://:3128", "1http://h:1"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_proxy(bad).has_value());
  }
}

TEST(ParseProxy, TextHasNoCredentials) {
  EXPECT_EQ(parse_proxy("http://user:pw@proxy.corp:3128/")->text(), "http://proxy.corp:3128");
  EXPECT_EQ(parse_proxy("[::1]:3128")->text(), "http://[::1]:3128");
}

TEST(ProxyEnvTest, ReadsEveryKnownVariableIncludingEmptyOnes) {
  const std::map<std::string, std::string> vars = {
      {"https_proxy", "http://127.0.0.1:7890"}, {"NO_PROXY", ""}, {"PATH", "/usr/bin"}, {"GRPC_PROXY", "x"}};
  const ProxyEnv env = read_proxy_env([&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
  ASSERT_EQ(env.size(), 3u);
  ASSERT_NE(find_var(env, "https_proxy"), nullptr);
  EXPECT_EQ(*find_var(env, "https_proxy"), "http://127.0.0.1:7890");
  ASSERT_NE(find_var(env, "NO_PROXY"), nullptr);
  EXPECT_EQ(*find_var(env, "NO_PROXY"), "");
  EXPECT_EQ(find_var(env, "PATH"), nullptr);
  EXPECT_EQ(find_var(env, "http_proxy"), nullptr);
}

TEST(Conflicts, NameWhichSpellingEachClientReads) {
  EXPECT_TRUE(conflicts({{"https_proxy", "http://a:1"}, {"HTTPS_PROXY", "http://a:1"}}).empty());
  EXPECT_TRUE(conflicts({{"https_proxy", "http://a:1"}}).empty());

  auto lines = conflicts({{"https_proxy", "http://127.0.0.1:7890"}, {"HTTPS_PROXY", "http://10.0.0.1:3128"}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "https_proxy=http://127.0.0.1:7890 and HTTPS_PROXY=http://10.0.0.1:3128 differ: curl, urllib, requests, "
            "grpc and ray read https_proxy; go reads HTTPS_PROXY");

  lines = conflicts({{"http_proxy", "http://a:1"}, {"HTTP_PROXY", "http://b:2"}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("curl, urllib, requests, grpc and ray read http_proxy; go reads HTTP_PROXY"),
            std::string::npos)
      << lines[0];

  // An empty lower-case value: curl and Go skip it, Python and gRPC take it (as "no proxy").
  lines = conflicts({{"https_proxy", ""}, {"HTTPS_PROXY", "http://b:2"}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "https_proxy='' and HTTPS_PROXY=http://b:2 differ: urllib, requests, grpc and ray read https_proxy; curl "
            "and go read HTTPS_PROXY");

  lines = conflicts({{"all_proxy", "socks5h://a:1"}, {"ALL_PROXY", "socks5h://b:2"}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("curl and requests read all_proxy; urllib, grpc, ray and go read neither"), std::string::npos)
      << lines[0];

  lines = conflicts({{"no_proxy", "a"}, {"NO_PROXY", "b"}, {"no_grpc_proxy", "c"}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("curl, urllib and requests read no_proxy; go reads NO_PROXY; grpc and ray read neither"),
            std::string::npos)
      << lines[0];

  lines = conflicts({{"https_proxy", "http://u:secret@a:1"}, {"HTTPS_PROXY", "http://b:2"}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find("secret"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("http://u:***@a:1"), std::string::npos) << lines[0];
}

TEST(Decide, ValueThatIsNoProxyAddress) {
  Target t;
  t.scheme = "https";
  t.host = "api.example.com";
  t.port = 443;
  t.text = "https://api.example.com/";
  const ProxyEnv env = {{"https_proxy", "http://"}};
  for (Client c : kClients) {
    const ProxyDecision d = decide(c, env, t);
    SCOPED_TRACE(d.why);
    EXPECT_FALSE(d.proxied);
    EXPECT_FALSE(d.proxy.has_value());
    EXPECT_EQ(d.unsupported, c != Client::ray);  // Ray's proxy support is off
  }
  EXPECT_NE(decide(Client::curl, env, t).why.find("curl fails"), std::string::npos);
  EXPECT_NE(decide(Client::grpc, env, t).why.find("connects directly"), std::string::npos);
}

TEST(Decide, HostPortTargetIsAnHttpUrlWithItsPortWritten) {
  Target t;
  t.host = "10.0.0.5";
  t.port = 80;
  t.text = "10.0.0.5:80";
  // urllib matches the port as written: a HOST:PORT target always writes it, even the default one.
  const ProxyEnv env = {{"http_proxy", "http://127.0.0.1:3128"}, {"no_proxy", "10.0.0.5:80"}};
  EXPECT_EQ(decide(Client::urllib, env, t).variable, "no_proxy");
  EXPECT_FALSE(decide(Client::urllib, env, t).proxied);
  EXPECT_TRUE(decide(Client::curl, env, t).proxied);
}

TEST(ClientNames, AreStable) {
  std::vector<std::string> names;
  for (Client c : kClients) names.emplace_back(name(c));
  EXPECT_EQ(names, (std::vector<std::string>{"curl", "urllib", "requests", "grpc", "ray", "go"}));
}

}  // namespace
}  // namespace proxy_table_test
}  // namespace coldstart::net
