#include "net/target.h"

#include <gtest/gtest.h>

#include <map>

#include "net/layers.h"
#include "net/test_env.h"
#include "util/error.h"

namespace coldstart::net {
namespace {

using test::env_of;

TEST(NetTarget, UrlsTakeTheirSchemesDefaultPorts) {
  Target t = parse_target("https://api.example.com/v1/chat?x=1");
  EXPECT_EQ(t.scheme, "https");
  EXPECT_EQ(t.host, "api.example.com");
  EXPECT_EQ(t.port, 443);
  EXPECT_EQ(t.path, "/v1/chat?x=1");
  EXPECT_TRUE(t.tls());
  EXPECT_EQ(parse_target("ws://h").port, 80);
  EXPECT_EQ(parse_target("wss://h:8443").port, 8443);
  EXPECT_EQ(parse_target("grpc://head:6379").port, 6379);
  EXPECT_EQ(parse_target("HTTP://User:pw@h:81/").host, "h");
  EXPECT_EQ(parse_target("https://[::1]:8443/").host, "::1");
}

TEST(NetTarget, HostPortIsRawTcp) {
  Target t = parse_target("10.0.0.5:29500");
  EXPECT_EQ(t.scheme, "");
  EXPECT_EQ(t.host, "10.0.0.5");
  EXPECT_EQ(t.port, 29500);
  EXPECT_FALSE(t.url());
  EXPECT_EQ(t.url_text(), "http://10.0.0.5:29500/");
  EXPECT_EQ(parse_target("[fe80::1]:22").host, "fe80::1");
}

TEST(NetTarget, BadTargetsAreRefusedNamingThem) {
  for (const char* bad : {"", "ftp://h/", "host", "host:0", "host:70000", "host:x", "::1:80", "https://", "a b:1",
                          "h/x:1", "https://h:99999/", "[::1", "https://[zz]/"}) {
    try {
      parse_target(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      if (*bad) {
        EXPECT_NE(what.find(bad), std::string::npos) << what;
      }
    }
  }
}

TEST(NetTarget, TheEnvironmentNamesRendezvousAndProxies) {
  auto ts = env_targets(env_of({{"MASTER_ADDR", "10.0.0.5"},
                                {"RAY_ADDRESS", "head-node"},
                                {"https_proxy", "http://127.0.0.1:7890"},
                                {"HTTPS_PROXY", "http://127.0.0.1:7890/"},
                                {"http_proxy", "proxy.corp:3128"}}));
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts[0].text, "10.0.0.5:29500");
  EXPECT_EQ(ts[0].origin, "MASTER_ADDR");
  EXPECT_TRUE(ts[0].rendezvous());
  EXPECT_EQ(ts[1].scheme, "grpc");
  EXPECT_EQ(ts[1].port, 6379);
  EXPECT_EQ(ts[1].origin, "RAY_ADDRESS");
  EXPECT_EQ(ts[2].text, "127.0.0.1:7890");
  EXPECT_EQ(ts[2].origin, "https_proxy");
  EXPECT_EQ(ts[3].host, "proxy.corp");
  EXPECT_EQ(ts[3].port, 3128);
  EXPECT_TRUE(env_targets(env_of({{"RAY_ADDRESS", "auto"}})).empty());
  EXPECT_EQ(env_targets(env_of({{"RAY_ADDRESS", "ray://head:10001"}}))[0].port, 10001);
  EXPECT_THROW(env_targets(env_of({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "x"}})), InputError);
  // A malformed proxy value is named without its password.
  try {
    env_targets(env_of({{"https_proxy", "http://user:secret@[::1:3128"}}));
    ADD_FAILURE() << "a malformed https_proxy was taken";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("https_proxy=http://user:***@[::1:3128"), std::string::npos) << e.what();
  }
}

TEST(NetLayers, NamesRoundTripAndConnectErrorsPointAtALayer) {
  for (Layer l : kLayers) EXPECT_EQ(parse_layer(name(l)), l);
  EXPECT_EQ(layer_of_connect_error(EHOSTUNREACH), Layer::next_hop);
  EXPECT_EQ(layer_of_connect_error(ENETUNREACH), Layer::route);
  EXPECT_EQ(layer_of_connect_error(ECONNREFUSED), Layer::transport);
  EXPECT_EQ(layer_of_connect_error(ETIMEDOUT), Layer::forward);
  EXPECT_FALSE(parse_status("fine").has_value());
}

}  // namespace
}  // namespace coldstart::net
