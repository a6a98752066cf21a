// The rank report's contract: tests/data/golden/rank_report.json names every field a rank may send, with its JSON
// type and its unit in its name. The model reads and writes it exactly, and the C++ worker's real report conforms
// (python/tests/test_report_conformance.py holds the torch probe to the same file).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "coord/server.h"
#include "model/result.h"
#include "util/fs.h"
#include "util/run_for_test.h"

namespace coldstart::worker {
namespace {
using nlohmann::json;

json golden() {
  return json::parse(read_file(std::string(COLDSTART_SOURCE_DIR) + "/tests/data/golden/rank_report.json"));
}

// Every field of `got` is in `want` with the same JSON type (integers and floats told apart), recursively.
void expect_conforms(const json& got, const json& want, const std::string& where) {
  ASSERT_EQ(got.type_name(), want.type_name()) << where;
  if (got.is_number()) {
    EXPECT_EQ(got.is_number_integer(), want.is_number_integer()) << where << ": " << got << " vs " << want;
  } else if (got.is_object() && where == "store_calls") {  // keyed by phase: each a tally like the golden's
    for (const auto& [k, v] : got.items()) expect_conforms(v, want.begin().value(), where + "." + k);
  } else if (got.is_object() && where != "env" && where != "launcher") {  // env and launcher: string maps
    for (const auto& [k, v] : got.items()) {
      ASSERT_TRUE(want.contains(k)) << where << "." << k << " is not in the golden report";
      expect_conforms(v, want[k], where.empty() ? k : where + "." + k);
    }
  } else if (got.is_array() && !want.empty()) {
    for (const auto& item : got) expect_conforms(item, want[0], where + "[]");
  }
}

TEST(RankReportContract, TheModelReadsAndWritesTheGoldenReportExactly) {
  json g = golden();
  RankReport r = g.get<RankReport>();
  EXPECT_EQ(json(r), g);
}

TEST(RankReportContract, TheWorkersRealReportConforms) {
  coord::Server server({"127.0.0.1", 0, "golden"});
  server.begin_trial(3, 1);
  ::setenv("COLDSTART_TOKEN", "golden", 1);
  std::string cmd = std::string(COLDSTART_BIN) + " worker --dry-run --rank 0 --nranks 1 --trial 3 --coord 127.0.0.1:" +
                    std::to_string(server.port()) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 500 && !server.all_done(); ++i) server.poll(20);
  ::pclose(p);
  ::unsetenv("COLDSTART_TOKEN");
  ASSERT_TRUE(server.all_done());
  const json& report = server.rank(0).result;
  expect_conforms(report, golden(), "");
  for (const char* required :
       {"rank", "pid", "host", "worker", "phases", "mono_anchor_ns", "real_anchor_ns", "dry_run"})
    EXPECT_TRUE(report.contains(required)) << required;
  EXPECT_EQ(report["worker"], "nccl");
}

}  // namespace
}  // namespace coldstart::worker
