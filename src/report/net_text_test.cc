// doctor net's report as text (report/net_text.h): the text's verdict, --compare's first difference inside out,
// passwords never shown, and the peer matrix with its endpoints and failing pairs.
#include "report/net_text.h"

#include <gtest/gtest.h>

#include <cerrno>

#include <nlohmann/json.hpp>

#include "net/diagnose.h"
#include "net/report.h"
#include "net/target.h"
#include "net/test_samples.h"
#include "report/net_html.h"

namespace coldstart::report {
namespace {

using net::test::sample_report;

TEST(NetReport, TheTextEndsWithTheVerdictItsEvidenceAndFix) {
  const std::string text = render_text(sample_report());
  EXPECT_NE(text.find("verdict: first broken layer: proxy (https://inet.test/)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  evidence: connect: ECONNREFUSED\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  fix: start it\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  proxy     BROKEN      nothing listens on the proxy\n"), std::string::npos) << text;
}

TEST(NetReport, CompareNamesTheFirstLayerInsideOutWhereTwoRunsDiffer) {
  net::NetReport a = sample_report(), b = sample_report();
  EXPECT_FALSE(compare_reports(a, a).found);
  b.process[0].status = net::Status::broken;
  b.facts.context.netns = "net:[2]";
  b.targets[0].layers[0].status = net::Status::broken;  // resolve differs too, but context is further in
  Difference d = compare_reports(a, b);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.layer, net::Layer::context);
  EXPECT_EQ(d.target, "");
  EXPECT_EQ(d.facts.at(0), "network namespace: net:[1] / net:[2]");
  EXPECT_EQ(to_json(d, "A", "B")["layer"], "context");
  b.process[0].status = net::Status::ok;
  d = compare_reports(a, b);
  EXPECT_EQ(d.layer, net::Layer::resolve);
  EXPECT_EQ(d.target, "https://inet.test/");
  EXPECT_NE(render_difference(d, "A", "B").find("first difference, inside out: resolve (https://inet.test/)"),
            std::string::npos);
}

// A direct run checks forward (ok); one through an on-link proxy skips it and breaks at the proxy: the proxy is the
// headline, not forward's ok against skipped, which stays the headline only where nothing fails.
TEST(NetReport, CompareHeadlinesTheLayerThatFailsNotOneSkipped) {
  net::NetReport a = sample_report(), b = sample_report();
  a.targets[0].layers = {net::Check{net::Layer::resolve, net::Status::ok, "", {}, ""},
                         net::Check{net::Layer::forward, net::Status::ok, "answers come back", {}, ""},
                         net::Check{net::Layer::proxy, net::Status::skipped, "no proxy variable is set", {}, ""},
                         net::Check{net::Layer::transport, net::Status::ok, "connected", {}, ""}};
  b.targets[0].layers = {net::Check{net::Layer::resolve, net::Status::ok, "", {}, ""},
                         net::Check{net::Layer::forward, net::Status::skipped, "on-link", {}, ""},
                         net::Check{net::Layer::proxy, net::Status::broken, "the proxy refuses", {}, "let it in"},
                         net::Check{net::Layer::transport, net::Status::not_checked, "see proxy", {}, ""}};
  Difference d = compare_reports(a, b);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.layer, net::Layer::proxy);
  EXPECT_EQ(d.b.fix, "let it in");
  b.targets[0].layers[2].status = net::Status::ok;
  b.targets[0].layers[3].status = net::Status::ok;
  d = compare_reports(a, b);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.layer, net::Layer::forward);
}

TEST(NetReport, ProxyPasswordsAreNeverWritten) {
  net::NetReport a = sample_report(), b = sample_report();
  a.proxy_env = {{"http_proxy", "http://user:secret@proxy.corp:3128"},
                 {"HTTPS_PROXY", "user:secret@proxy.corp:3128"},
                 {"no_proxy", ""}};
  const std::string json = to_json(a).dump();
  EXPECT_EQ(json.find("user:secret@"), std::string::npos) << json;
  EXPECT_NE(json.find("http://user:***@proxy.corp:3128"), std::string::npos) << json;
  EXPECT_NE(json.find("\"user:***@proxy.corp:3128\""), std::string::npos) << json;
  EXPECT_EQ(net::net_report_from_json(to_json(a)).proxy_env[2].value, "");  // an empty value stays empty
  // --compare's facts line, from a run written before passwords were hidden too.
  b.process[0].status = net::Status::broken;
  for (const Difference& d : {compare_reports(a, b), compare_reports(b, a)}) {
    const std::string text = render_difference(d, "A", "B");
    const std::string cmp = to_json(d, "A", "B").dump();
    EXPECT_EQ(text.find("user:secret@"), std::string::npos) << text;
    EXPECT_EQ(cmp.find("user:secret@"), std::string::npos) << cmp;
    EXPECT_NE(text.find("http_proxy=http://user:***@proxy.corp:3128"), std::string::npos) << text;
  }
}

net::PeerMatrix sample() { return net::test::sample_peers(); }

TEST(PeerRender, MatrixEndpointsAndFailingPairs) {
  const std::string expected =
      "peers: 3 ranks on 2 hosts; 2 of 6 pairs failing\n"
      "from\\to       0       1        2\n"
      "      0       -  ok 0.3  TIMEOUT\n"
      "      1  ok 1.3       -      111\n"
      "      2  ok 2.3  ok 2.3        -\n"
      "endpoints:\n"
      "    0  node1  eth0  10.0.0.1:41000\n"
      "    1  node1  eth0  10.0.0.1:41001\n"
      "    2  node2  ens5  10.0.0.2:41002  ! a note\n"
      "failing pairs:\n"
      "  0 -> 2  forward: ETIMEDOUT after 1.0 s: dropped beyond the first hop\n"
      "  1 -> 2  transport: ECONNREFUSED: nothing listening\n";
  EXPECT_EQ(render_peers(sample()), expected);
}

net::PeerMatrix sample_with_gloo() { return net::test::sample_peers_with_gloo(); }

TEST(PeerRender, GloosInterfaceBesideNcclsAndWhereItDiffers) {
  const std::string text = render_peers(sample_with_gloo());
  const std::string expected =
      "endpoints (NCCL's interface and where it listens; Gloo's interface):\n"
      "    0  node1  eth0  10.0.0.1:41000  gloo eth0\n"
      "    1  node1  eth0  10.0.0.1:41001  gloo lo 127.0.1.1 (differs from NCCL's eth0 10.0.0.1: Gloo's path is not in "
      "the matrix) (a loopback address)\n"
      "    2  node2  ens5  10.0.0.2:41002  gloo - (no interface named 'ib0')  ! a note\n";
  EXPECT_NE(text.find(expected), std::string::npos) << text;
}

// An IPv6 rank's endpoint is written with its address in brackets, in the text and in the HTML page alike.
TEST(PeerRender, AnIpv6EndpointIsBracketedInTextAndHtml) {
  net::NetReport report = net::test::sample_report();
  net::PeerMatrix m = sample();
  m.endpoints[2].address = "fd00::2";
  report.peers = m;
  EXPECT_NE(render_peers(m).find("[fd00::2]:41002"), std::string::npos) << render_peers(m);
  const std::string html = render_net_html({&report}, {"a.json"});
  EXPECT_NE(html.find("[fd00::2]:41002"), std::string::npos);
  EXPECT_EQ(html.find("fd00::2:41002"), std::string::npos);
}

}  // namespace
}  // namespace coldstart::report
