// doctor net's report: its JSON read back as written, refused with the field's path when it is not (the text and
// --compare: report/net_text_test.cc). The recorded lab runs (tests/data/net/reports/) must open.
#include "net/report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "net/test_samples.h"
#include "util/error.h"

namespace coldstart::net {
namespace {

using test::sample_report;

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
