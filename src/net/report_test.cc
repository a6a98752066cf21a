// doctor net's report: its JSON read back as written, refused with the field's path when it is not, the text's
// verdict, and --compare's first difference inside out. The recorded lab runs (tests/data/net/reports/) must open.
#include "net/report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace coldstart::net {
namespace {

NetReport sample_report() {
  NetReport r;
  r.host = "wslhost";
  r.facts.hostname = "wslhost";
  r.facts.context.netns = "net:[1]";
  r.facts.context.interfaces = {Interface{"lo", 1, true, true, {"127.0.0.1"}, {}}};
  r.proxy_env = {{"https_proxy", "http://127.0.0.1:7890"}};
  r.process = {Check{Layer::context, Status::ok, "the host's network namespace", {"network namespace net:[1]"}, ""},
               Check{Layer::platform, Status::ok, "Linux", {}, ""}};
  TargetReport t;
  t.target = parse_target("https://inet.test/");
  t.path = "proxy http://127.0.0.1:7890 (https_proxy, curl's rules)";
  t.layers = {
      Check{Layer::resolve, Status::ok, "an address", {}, ""},
      Check{Layer::proxy, Status::broken, "nothing listens on the proxy", {"connect: ECONNREFUSED"}, "start it"},
      Check{Layer::transport, Status::not_checked, "see proxy", {}, ""}};
  r.targets = {t};
  r.verdict = decide_verdict(r);
  return r;
}

TEST(NetReport, JsonIsReadBackAsWritten) {
  const NetReport r = sample_report();
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["schema"], "coldstart.net/1");
  EXPECT_EQ(j["verdict"]["layer"], "proxy");
  EXPECT_EQ(j["targets"][0]["first_broken"], "proxy");
  const NetReport back = net_report_from_json(j);
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.verdict.check.layer, Layer::proxy);
  EXPECT_EQ(back.facts.context.interfaces.at(0).ipv4.at(0), "127.0.0.1");
}

TEST(NetReport, AMalformedReportNamesTheField) {
  auto message = [](const nlohmann::json& j) -> std::string {
    try {
      net_report_from_json(j);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  nlohmann::json j = to_json(sample_report());
  EXPECT_EQ(message(nlohmann::json::array()), "doctor net report: (top): expected an object, found an array");
  nlohmann::json bad = j;
  bad["schema"] = "coldstart.bench/2";
  EXPECT_NE(message(bad).find("schema: 'coldstart.bench/2', not coldstart.net/1"), std::string::npos) << message(bad);
  bad = j;
  bad["targets"][0]["layers"][1]["layer"] = "wire";
  EXPECT_EQ(message(bad),
            "doctor net report: targets[0].layers[1].layer: unknown value 'wire'; expected context, platform, resolve, "
            "route, next_hop, forward, proxy, transport or service");
  bad = j;
  bad["process"][0]["evidence"] = {1};
  EXPECT_EQ(message(bad), "doctor net report: process[0].evidence[0]: expected a string, found a number");
  bad = j;
  bad["targets"][0].erase("layers");
  EXPECT_EQ(message(bad), "doctor net report: targets[0].layers: missing");
}

TEST(NetReport, TheTextEndsWithTheVerdictItsEvidenceAndFix) {
  const std::string text = render_text(sample_report());
  EXPECT_NE(text.find("verdict: first broken layer: proxy (https://inet.test/)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  evidence: connect: ECONNREFUSED\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  fix: start it\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  proxy     BROKEN      nothing listens on the proxy\n"), std::string::npos) << text;
}

TEST(NetReport, CompareNamesTheFirstLayerInsideOutWhereTwoRunsDiffer) {
  NetReport a = sample_report(), b = sample_report();
  EXPECT_FALSE(compare_reports(a, a).found);
  b.process[0].status = Status::broken;
  b.facts.context.netns = "net:[2]";
  b.targets[0].layers[0].status = Status::broken;  // resolve differs too, but context is further in
  Difference d = compare_reports(a, b);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.layer, Layer::context);
  EXPECT_EQ(d.target, "");
  EXPECT_EQ(d.facts.at(0), "network namespace: net:[1] / net:[2]");
  EXPECT_EQ(to_json(d, "A", "B")["layer"], "context");
  b.process[0].status = Status::ok;
  d = compare_reports(a, b);
  EXPECT_EQ(d.layer, Layer::resolve);
  EXPECT_EQ(d.target, "https://inet.test/");
  EXPECT_NE(render_difference(d, "A", "B").find("first difference, inside out: resolve (https://inet.test/)"),
            std::string::npos);
}

TEST(NetReport, ProxyPasswordsAreNeverWritten) {
  NetReport a = sample_report(), b = sample_report();
  a.proxy_env = {{"http_proxy", "http://user:secret@proxy.corp:3128"},
                 {"HTTPS_PROXY", "user:secret@proxy.corp:3128"},
                 {"no_proxy", ""}};
  const std::string json = to_json(a).dump();
  EXPECT_EQ(json.find("user:secret@"), std::string::npos) << json;
  EXPECT_NE(json.find("http://user:***@proxy.corp:3128"), std::string::npos) << json;
  EXPECT_NE(json.find("\"user:***@proxy.corp:3128\""), std::string::npos) << json;
  EXPECT_EQ(net_report_from_json(to_json(a)).proxy_env[2].value, "");  // an empty value stays empty
  // --compare's facts line, from a run written before passwords were hidden too.
  b.process[0].status = Status::broken;
  for (const Difference& d : {compare_reports(a, b), compare_reports(b, a)}) {
    const std::string text = render_difference(d, "A", "B");
    const std::string cmp = to_json(d, "A", "B").dump();
    EXPECT_EQ(text.find("user:secret@"), std::string::npos) << text;
    EXPECT_EQ(cmp.find("user:secret@"), std::string::npos) << cmp;
    EXPECT_NE(text.find("http_proxy=http://user:***@proxy.corp:3128"), std::string::npos) << text;
  }
}

TEST(NetReport, TheRecordedLabRunsOpen) {
  for (const char* name : {"wsl-proxy-trap.json", "peers-dropped-pair.json"}) {
    std::ifstream in(std::string(COLDSTART_SOURCE_DIR) + "/tests/data/net/reports/" + name);
    std::stringstream text;
    text << in.rdbuf();
    const NetReport r = net_report_from_json(nlohmann::json::parse(text.str()));
    EXPECT_EQ(r.verdict.status, Status::broken) << name;
  }
}

}  // namespace
}  // namespace coldstart::net
