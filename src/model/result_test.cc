#include "model/result.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "model/phases.h"
#include "model/summary.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart {
namespace {
using nlohmann::json;

RankResult rank(int r, double init_ms, double first_ms) {
  RankResult x;
  x.rank = r;
  x.cuda_visible_devices = std::to_string(r);
  x.phases = {{"cuda_context", 1, 270}, {"comm_init", 300, init_ms}, {"first_enqueue", 800, first_ms}};
  x.steady = Steady{64 << 20, 20, 500, 134, 268};
  x.mem = {1000, 100, 200, 300, "comm_init"};
  x.exit = "exit 0";
  return x;
}

BenchResults sample() {
  BenchResults r;
  r.context.host = "h";
  r.context.gpus = {{0, "NVIDIA H200", "0000:00:06.0", "GPU-a", 1, 90}};
  r.context.nccl = {{"", "/lib/libnccl.so.2", "2.28.3", {"80", "90"}, "sass"}};
  r.spec.env = {default_env_axis()};
  r.spec.devices = {"0", "1"};
  for (const char* v : {"", "0"}) {
    Config c;
    c.id = static_cast<int>(r.configs.size());
    c.env = {{"NCCL_CUMEM_ENABLE", *v ? std::optional<std::string>(v) : std::nullopt}};
    r.configs.push_back(c);
  }
  for (int i = 0; i < 4; ++i) {
    TrialResult t;
    t.index = i;
    t.config_id = i % 2;
    t.status = i == 3 ? TrialStatus::hang : TrialStatus::ok;
    t.ranks = {rank(0, 400 + i, 150 + i), rank(1, 410 + i, 160 + i)};
    r.trials.push_back(t);
  }
  r.summaries = summarize(r.configs, r.trials);
  return r;
}
}  // namespace

TEST(Results, RoundTripKeepsEveryField) {
  BenchResults a = sample();
  json j = json(a);
  EXPECT_EQ(j["schema"], kBenchSchema);
  BenchResults b = bench_results_from_json(j, "x.json");
  EXPECT_EQ(json(b), j);
  EXPECT_FALSE(b.spec.env[0].values[0].has_value());
  EXPECT_EQ(b.trials[1].ranks[1].phase("comm_init")->dur_ms, 411);
  EXPECT_EQ(b.context.gpus[0].sm, 90);
  EXPECT_EQ(b.context.nccl[0].sass, (std::vector<std::string>{"80", "90"}));
  EXPECT_EQ(b.context.nccl[0].kernels, "sass");
}

// A configuration over nodes keeps its count and link through the file; one over one node is written as before
// --nodes existed (no field), so that files of runs on one host do not change.
TEST(Results, NodesAndLinkRoundTripAndAreWrittenOnlyAboveOneNode) {
  BenchResults a = sample();
  json plain = json(a);
  EXPECT_FALSE(plain["configs"][0].contains("nodes"));
  EXPECT_FALSE(plain["spec"].contains("nodes"));
  EXPECT_FALSE(plain["spec"].contains("link"));
  a.spec.nodes = {1, 2};
  a.spec.link = *Link::parse("50us/100gbit");
  a.configs[1].nodes = 2;
  a.configs[1].link = a.spec.link;
  a.summaries = summarize(a.configs, a.trials);
  json j = json(a);
  EXPECT_EQ(j["configs"][1]["nodes"], 2);
  EXPECT_EQ(j["configs"][1]["link"], "50us/100gbit");
  BenchResults b = bench_results_from_json(j, "x.json");
  EXPECT_EQ(json(b), j);
  EXPECT_EQ(b.configs[1].key(), a.configs[1].key());
  EXPECT_EQ(b.spec.nodes, (std::vector<int>{1, 2}));
  j["configs"][1]["link"] = "fast";
  EXPECT_THROW(bench_results_from_json(j, "x.json"), InputError);
  j["configs"][1]["link"] = "50us/100gbit";
  j["spec"]["nodes"] = {1, 65};
  EXPECT_THROW(bench_results_from_json(j, "x.json"), InputError);
}

TEST(Results, UnknownFieldsAreIgnored) {
  json j = json(sample());
  j["future_field"] = 1;
  j["trials"][0]["ranks"][0]["new_thing"] = "x";
  EXPECT_NO_THROW(bench_results_from_json(j, "x.json"));
}

TEST(Results, OtherSchemaCorruptAndTruncatedFilesNameTheFile) {
  const TempDir scratch("coldstart-results-");
  const std::string& dir = scratch.path();
  json other = json(sample());
  other["schema"] = "coldstart.bench/99";
  write_file_atomic(dir + "/other.json", other.dump());
  std::string full = json(sample()).dump();
  write_file_atomic(dir + "/truncated.json", full.substr(0, full.size() / 2));
  write_file_atomic(dir + "/trace.json", R"({"traceEvents": []})");
  auto error_of = [](const std::string& path) {
    try {
      load_bench_results(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(dir + "/other.json").find("other.json: schema coldstart.bench/99"), std::string::npos);
  EXPECT_NE(error_of(dir + "/truncated.json").find("truncated.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(dir + "/trace.json").find("a Perfetto/Chrome trace, not a bench result"), std::string::npos);
  EXPECT_NE(error_of(dir + "/missing.json").find("missing.json"), std::string::npos);
  json wrong_type = json(sample());
  wrong_type["trials"] = "many";
  write_file_atomic(dir + "/wrong.json", wrong_type.dump());
  EXPECT_NE(error_of(dir + "/wrong.json").find("malformed bench result (trials: expected an array, found a string)"),
            std::string::npos)
      << error_of(dir + "/wrong.json");
  // Read without a tree: the field of the wrong shape is named where it is, and a file of another schema is said to
  // be one even where its fields are of another shape too (the schema is read after them).
  json deep = json(sample());
  deep["trials"][1]["ranks"][0]["mem"]["total_bytes"] = "lots";
  write_file_atomic(dir + "/deep.json", deep.dump());
  EXPECT_NE(
      error_of(dir + "/deep.json").find("(trials[1].ranks[0].mem.total_bytes: expected a number, found a string)"),
      std::string::npos)
      << error_of(dir + "/deep.json");
  deep["schema"] = "coldstart.bench/99";
  write_file_atomic(dir + "/deep-other.json", deep.dump());
  EXPECT_NE(error_of(dir + "/deep-other.json").find("schema coldstart.bench/99 is not"), std::string::npos);
  write_file_atomic(dir + "/lines.jsonl", json(sample().trials[0]).dump() + "\n" + json(sample().trials[1]).dump());
  EXPECT_NE(error_of(dir + "/lines.jsonl").find("one trial per line"), std::string::npos)
      << error_of(dir + "/lines.jsonl");
  // gzip's header (docs/results/ keeps larger runs as results.json.gz): said so, with the way to read it
  write_file_atomic(dir + "/results.json.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03", 10));
  EXPECT_NE(error_of(dir + "/results.json.gz").find("results.json.gz: gzip-compressed; give it decompressed"),
            std::string::npos)
      << error_of(dir + "/results.json.gz");
}

// Schema /1 named some fields otherwise; a trial line that uses them is read in the words of /2.
TEST(Results, ATrialLineOfSchema1IsUpgraded) {
  json t = json(sample().trials[0]);
  json& r = t["ranks"][0];
  r["mem"] = {{"before_init", 100}, {"after_init", 200}, {"total", 1000}};
  r["nccl"] = {{"masked", true}, {"transports_lazy", {{"P2P/IPC", 3}}}};
  r["exit"] = "stopped by the lab";
  r.erase("stopped_by_lab");
  r["torch_version"] = "2.9.0";
  r["torch_init"] = "lazy";
  r.erase("worker");
  TrialResult got = trial_from_json(t);
  const RankResult& g = got.ranks[0];
  EXPECT_EQ(g.mem.used_before_init_bytes, 100);
  EXPECT_EQ(g.mem.used_after_init_bytes, -1);  // lazy torch init: measured before the communicator existed
  EXPECT_EQ(g.mem.total_bytes, 1000);
  ASSERT_TRUE(g.nccl);
  EXPECT_TRUE(g.nccl->renumbered);
  EXPECT_EQ(g.nccl->lazy_connection_count(), 3);
  EXPECT_TRUE(g.stopped_by_lab);
  EXPECT_EQ(g.worker, Worker::torch);
  // The same line in /2 words is read as it is.
  TrialResult same = trial_from_json(json(sample().trials[0]));
  EXPECT_EQ(json(same), json(sample().trials[0]));
}

TEST(Summary, StatisticsOverRankSamplesOfOkTrialsOnly) {
  BenchResults r = sample();
  const ConfigSummary& s0 = r.summaries[0];  // trials 0 and 2 (ok)
  EXPECT_EQ(s0.status_counts.at("ok"), 2);
  const Stats* init = s0.phase("comm_init");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->n, 4);
  EXPECT_DOUBLE_EQ(init->min, 400);
  EXPECT_DOUBLE_EQ(init->max, 412);
  const ConfigSummary& s1 = r.summaries[1];  // trial 1 ok, trial 3 hang
  EXPECT_EQ(s1.status_counts.at("hang"), 1);
  EXPECT_EQ(s1.phase("comm_init")->n, 2);
  EXPECT_DOUBLE_EQ(s1.nccl_mem_init.median, 100);  // after_init - before_init
  EXPECT_DOUBLE_EQ(s1.busbw_gbps.median, 268);
  EXPECT_EQ(s0.phases.front().name, "cuda_context");  // in the order ranks ran them
}

// Cold start is one definition: process start to the first collective done, on the slowest rank.
TEST(Ready, FromProcessStartToTheFirstCollectiveDoneOnTheSlowestRank) {
  RankResult a, b;
  a.phases = {{"process_start", -5, 10},
              {"comm_init", 300, 400},
              {"first_enqueue", 700, 150},
              {"first_wait", 850, 1},
              {"second_enqueue", 851, 1}};
  b.phases = {{"process_start", -2, 10}, {"comm_init", 300, 400}, {"first_enqueue", 700, 160}, {"first_wait", 860, 2}};
  EXPECT_DOUBLE_EQ(*a.ready_ms(), 856);
  EXPECT_DOUBLE_EQ(*b.ready_ms(), 864);
  TrialResult t;
  t.ranks = {a, b};
  EXPECT_EQ(t.slowest_rank(), 1);
  EXPECT_DOUBLE_EQ(*t.ready_ms(), 864);
  // The torch probe's first collective is its first barrier.
  RankResult torch;
  torch.phases = {{"import_torch", 0, 3000},
                  {"barrier_enqueue", 4000, 600},
                  {"barrier_wait", 4600, 1},
                  {"first_enqueue", 4601, 1},
                  {"first_wait", 4602, 1}};
  EXPECT_DOUBLE_EQ(*torch.ready_ms(), 4601);
  // A rank that never got there: no ready, and none for its trial.
  RankResult stuck;
  stuck.phases = {{"comm_init", 300, 400}};
  EXPECT_FALSE(stuck.ready_ms());
  t.ranks.push_back(stuck);
  EXPECT_FALSE(t.ready_ms());
  EXPECT_EQ(t.slowest_rank(), -1);
}

TEST(Ready, TheSummaryTakesOneValuePerOkTrial) {
  BenchResults r = sample();
  for (auto& t : r.trials)
    for (auto& rank : t.ranks) rank.phases.push_back({"first_wait", 1000, 5});
  r.summaries = summarize(r.configs, r.trials);
  EXPECT_EQ(r.summaries[0].ready.n, 2);              // trials 0 and 2
  EXPECT_EQ(r.summaries[1].ready.n, 1);              // trial 1; trial 3 hung
  EXPECT_DOUBLE_EQ(r.summaries[0].ready.min, 1004);  // from cuda_context's start at 1 to first_wait's end at 1005
}

TEST(Report, RankPhaseTimesBecomeRelativeToTheTrialStart) {
  json wire = {
      {"rank", 1},
      {"phases", json::array({{{"name", "comm_init"}, {"start_ns", 1'500'000'000}, {"end_ns", 1'900'000'000}}})},
      {"steady", {{"busbw_gbps", 270.0}}},
      {"mem", {{"used_before_init_bytes", 5}, {"used_after_init_bytes", 7}}}};
  std::string error;
  auto report = parse_report(wire, &error);
  ASSERT_TRUE(report) << error;
  RankResult r = rank_result_from_report(*report, 1'000'000'000);
  ASSERT_EQ(r.phases.size(), 1u);
  EXPECT_DOUBLE_EQ(r.phases[0].start_ms, 500);
  EXPECT_DOUBLE_EQ(r.phases[0].dur_ms, 400);
  EXPECT_DOUBLE_EQ(r.steady->busbw_gbps, 270);
  EXPECT_EQ(r.mem.used_after_init_bytes, 7);
  EXPECT_EQ(r.mem.used_after_first_bytes, -1);
}

TEST(Report, AReportOfTheWrongShapeIsAnErrorNotAnException) {
  std::string error;
  EXPECT_FALSE(parse_report(json::array(), &error));
  EXPECT_NE(error.find("malformed report"), std::string::npos);
  EXPECT_FALSE(parse_report({{"rank", "zero"}}, &error));
  EXPECT_FALSE(parse_report({{"worker", "tensorflow"}}, &error));
  EXPECT_NE(error.find("unknown value 'tensorflow'"), std::string::npos) << error;
}

}  // namespace coldstart

namespace coldstart {
namespace {

// Two builds of one version and patches (the patched library and a candidate built beside it) are told apart by the
// nearest folder that differs; a library alone, or of another version, keeps its name.
TEST(Summary, LibrariesOfOneVersionAreToldApartByTheirFolders) {
  std::vector<NcclLibInfo> libs = {
      {"P", "/root/.cache/coldstart/nccl/2.30.7+peer-regions/build/patched/lib/libnccl.so.2", "2.30.7+peer-regions"},
      {"N", "/tmp/nccl-build/next/lib/libnccl.so.2", "2.30.7+peer-regions"},
      {"S", "/tmp/nccl-build/stock/lib/libnccl.so.2", "2.30.7"},
      {"", "", ""},
  };
  tell_apart(libs);
  EXPECT_EQ(libs[0].version, "2.30.7+peer-regions (patched)");
  EXPECT_EQ(libs[1].version, "2.30.7+peer-regions (next)");
  EXPECT_EQ(libs[2].version, "2.30.7");
  EXPECT_EQ(libs[3].version, "");
  // Alike down to the root: the whole path
  std::vector<NcclLibInfo> same = {{"a", "/x/lib/libnccl.so.2", "2.28.9"}, {"b", "/x/lib/libnccl.so.2.28.9", "2.28.9"}};
  tell_apart(same);
  EXPECT_EQ(same[0].version, "2.28.9 (/x/lib/libnccl.so.2)");
  EXPECT_EQ(same[1].version, "2.28.9 (/x/lib/libnccl.so.2.28.9)");
}

}  // namespace
}  // namespace coldstart
