// coldstart report as a user runs it (the binary): bad files in one line, '-' as standard input, outputs that never
// replace what they should not, the wrong file named for what it is, --json, --compare's exit statuses, and --growth.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/result.h"
#include "util/fs.h"
#include "util/random.h"
#include "util/run_for_test.h"

namespace coldstart::report {
namespace {
using nlohmann::json;

const std::string kRecorded = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/";
using coldstart::test_cli::Output;
using coldstart::test_cli::run;
using coldstart::test_cli::run_shell;

TEST(CliReport, BadFilesAreOneLineNamingTheFileWithStatus2) {
  const std::string dir = "/tmp/coldstart-report-" + random_hex(6);
  std::filesystem::create_directories(dir);
  std::string good = kRecorded + "2026-11-29-h200x2/default.json";
  std::string text;
  {
    std::ifstream in(good);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir + "/" + name) << body;
    return dir + "/" + name;
  };
  std::string truncated = write("truncated.json", text.substr(0, text.size() / 2));
  std::string other = write("other.json", R"({"schema":"coldstart.bench/99","context":{}})");
  std::string corrupt = write("corrupt.json", "\x01\x02 not json");
  std::string wrong_type =
      write("wrong.json", R"({"schema":"coldstart.bench/1","context":{},"spec":{},"configs":3,"trials":[]})");
  std::string budget = kRecorded + "2026-11-29-h200x2/trace/torchrun-isolated/budget.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"report " + truncated, truncated},
      {"report " + other, "coldstart.bench/99"},
      {"report " + corrupt, corrupt},
      {"report " + wrong_type, wrong_type},
      {"report " + budget, "not a bench result"},
      {"report " + dir + "/missing.json", "missing.json"},
      {"report " + good + " --html /nonexistent-dir/r.html", "--html"},
      {"report " + good + " --trial 999 --html " + dir + "/r.html", "--trial 999"},
      {"report " + good + " --compare " + truncated, truncated},
      {"report " + good + " --threshold -3", "--threshold"}};
  for (const auto& [args, needle] : cases) {
    Output o = run(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << args << "\n" << o.text;
    EXPECT_NE(o.text.find(needle), std::string::npos) << args << "\n" << o.text;
  }
  std::filesystem::remove_all(dir);
}

// '-' reads standard input, as Unix tools do: a pipe or a redirected file gives what the file itself gives, bounded
// as a file is (an endless input stops at the same 512 MiB with one line); the loader's two readers share one read;
// doctor net --compare reads a report from it as well.
TEST(CliReport, DashReadsStandardInputBoundedAsAFile) {
  const std::string good = kRecorded + "2026-11-29-h200x2/default.json";
  const Output file = run("report " + good + " --json");
  ASSERT_EQ(file.status, 0) << file.text;
  for (const std::string& how : {"< " + good, "cat " + good + " |"}) {
    const bool piped = how.starts_with("cat");
    Output o = run_shell(piped ? how + " " + std::string(COLDSTART_BIN) + " report - --json"
                               : std::string(COLDSTART_BIN) + " report - --json " + how);
    EXPECT_EQ(o.status, 0) << how << "\n" << o.text;
    EXPECT_EQ(o.text, file.text) << how;
  }
  Output compare = run("report " + good + " --compare - < " + good);
  EXPECT_EQ(compare.status, 0) << compare.text;
  Output doctor = run("doctor --from - < " + good);
  EXPECT_EQ(doctor.status, 0) << doctor.text;
  EXPECT_EQ(doctor.text, run("doctor --from " + good).text);
  const std::string net = std::string(COLDSTART_SOURCE_DIR) + "/tests/data/net/reports/wsl-proxy-trap.json";
  Output net_compare = run("doctor net --compare - " + net + " < " + net);
  EXPECT_EQ(net_compare.status, 0) << net_compare.text;
  EXPECT_EQ(net_compare.text, "no layer differs between - and " + net + "\n");
  Output endless = run("report - < /dev/zero");
  EXPECT_EQ(endless.status, 2) << endless.text;
  EXPECT_EQ(endless.text,
            "coldstart: - (standard input): larger than the 512 MiB coldstart reads from one file; give "
            "the results.json bench wrote or a doctor net --json file\n");
  Output garbage = run_shell("echo not-json | " + std::string(COLDSTART_BIN) + " report -");
  EXPECT_EQ(garbage.status, 2) << garbage.text;
  EXPECT_NE(garbage.text.find("- (standard input)"), std::string::npos) << garbage.text;
}

// Outputs are written safely: a device or pipe in place (never replaced), never through a link planted beside the
// target, never over an input.
TEST(CliReport, OutputsNeverReplaceDevicesFollowLinksOrOverwriteInputs) {
  const std::string in = kRecorded + "2026-11-29-h200x2/default.json";
  Output to_null = run("report " + in + " --html /dev/null");
  EXPECT_EQ(to_null.status, 0) << to_null.text;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  const std::string dir = "/tmp/coldstart-report-" + random_hex(6);
  std::filesystem::create_directories(dir);
  write_file_atomic(dir + "/victim", "keep me");
  std::filesystem::create_symlink(dir + "/victim", dir + "/out.html.tmp");
  Output planted = run("report " + in + " --html " + dir + "/out.html");
  EXPECT_EQ(planted.status, 0) << planted.text;
  EXPECT_EQ(read_file(dir + "/victim"), "keep me");
  EXPECT_NE(read_file(dir + "/out.html").find("</html>"), std::string::npos);
  std::filesystem::copy_file(in, dir + "/results.json");
  Output same = run("report " + dir + "/results.json --html " + dir + "/results.json");
  EXPECT_EQ(same.status, 2) << same.text;
  EXPECT_NE(same.text.find("that is an input file"), std::string::npos) << same.text;
  EXPECT_EQ(read_file(dir + "/results.json"), read_file(in));
  std::filesystem::remove_all(dir);
}

// What the wrong file is, named: run.json, results.jsonl, a folder, a file whose trials point nowhere.
TEST(CliReport, TheWrongFileIsNamedForWhatItIs) {
  const std::string dir = "/tmp/coldstart-report-" + random_hex(6);
  std::filesystem::create_directories(dir);
  write_file_atomic(dir + "/run.json", R"({"schema": "coldstart.run/1", "spec": {}})");
  write_file_atomic(dir + "/results.jsonl", "{\"index\": 0, \"ranks\": []}\n{\"index\": 1, \"ranks\": []}\n");
  json damaged = json::parse(read_file(kRecorded + "2026-11-29-h200x2/default.json"));
  damaged["trials"][0]["config_id"] = 99;
  write_file_atomic(dir + "/damaged.json", damaged.dump());
  json empty = damaged;
  empty["configs"] = json::array();
  write_file_atomic(dir + "/empty.json", empty.dump());
  for (const auto& [file, needle] : std::vector<std::pair<std::string, std::string>>{
           {"run.json", "bench's run settings (run.json)"},
           {"results.jsonl", "one trial per line"},
           {"", "a folder; give"},
           {"damaged.json", "trials[0].config_id: 99, a configuration the run does not have"},
           {"empty.json", "configs: empty"}}) {
    Output o = run("report " + dir + "/" + file + " --html " + dir + "/x.html");
    EXPECT_EQ(o.status, 2) << file << "\n" << o.text;
    EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
    EXPECT_NE(o.text.find(needle), std::string::npos) << file << "\n" << o.text;
  }
  std::filesystem::remove_all(dir);
}

// --json: one file in the current schema, a /1 file upgraded with its summaries and ready (what coldstart.load reads).
TEST(CliReport, JsonPrintsOneFileInTheCurrentSchema) {
  Output o = run("report " + kRecorded + "2026-11-29-h200x2/default.json --json");
  ASSERT_EQ(o.status, 0) << o.text;
  json j = json::parse(o.text);
  EXPECT_EQ(j["schema"], "coldstart.bench/2");
  ASSERT_FALSE(j["trials"].empty());
  EXPECT_GT(j["trials"][0]["ready_ms"].get<double>(), 0);
  EXPECT_FALSE(j["summaries"].empty());
  const std::string f = kRecorded + "2026-11-30-h200x2/default.json";
  Output two = run("report " + f + " " + f + " --json");
  EXPECT_EQ(two.status, 2) << two.text;
  EXPECT_NE(two.text.find("--json: give one results file"), std::string::npos) << two.text;
  Output mixed = run("report " + f + " --json --markdown");
  EXPECT_EQ(mixed.status, 2) << mixed.text;
  EXPECT_EQ(mixed.text.find("| configuration"), std::string::npos) << mixed.text;  // nothing printed before
}

// --growth over the recorded sweep: a table per configuration with every rank count, the law and the predictions
// marked as such, in Markdown too; the HTML report draws the growth once the runs span 3 rank counts; runs that cannot
// show a growth are one line with status 2.
TEST(CliReport, GrowthOverTheRecordedSweep) {
  std::string runs;
  for (int k : {2, 4, 8, 16, 32})
    runs += " " + kRecorded + "2026-12-05-h100x1-growth/growth-" + std::to_string(k) + "/results.json";
  Output text = run("report --growth" + runs);
  ASSERT_EQ(text.status, 0) << text.text;
  EXPECT_NE(text.text.find("growth: isolated · NCCL_P2P_PEER_REGION=0 · NCCL_CUMEM_ENABLE=(unset)"), std::string::npos)
      << text.text;
  EXPECT_NE(text.text.find("32 ranks"), std::string::npos);
  EXPECT_NE(text.text.find("1k ranks (predicted)"), std::string::npos);
  EXPECT_NE(text.text.find("\nready "), std::string::npos);
  EXPECT_NE(text.text.find("an extrapolation"), std::string::npos);
  Output markdown = run("report --growth --markdown" + runs);
  ASSERT_EQ(markdown.status, 0) << markdown.text;
  EXPECT_NE(markdown.text.find("| ready | 1.2 s |"), std::string::npos) << markdown.text;

  const std::string dir = "/tmp/coldstart-growth-" + random_hex(6);
  std::filesystem::create_directories(dir);
  Output three = run("report --html " + dir + "/three.html" + runs);
  ASSERT_EQ(three.status, 0) << three.text;
  const std::string page = read_file(dir + "/three.html");
  EXPECT_NE(page.find("Growth with the ranks (log–log)"), std::string::npos);
  EXPECT_NE(page.find("aria-label=\"growth with the ranks\""), std::string::npos);
  const std::string two_runs = kRecorded + "2026-12-05-h100x1-growth/growth-2/results.json " + kRecorded +
                               "2026-12-05-h100x1-growth/growth-4/results.json";
  Output two = run("report --html " + dir + "/two.html " + two_runs);
  ASSERT_EQ(two.status, 0) << two.text;
  EXPECT_EQ(read_file(dir + "/two.html").find("Growth with the ranks"), std::string::npos);
  std::filesystem::remove_all(dir);

  for (const std::string& bad : {"report --growth " + two_runs, "report --growth --json" + runs}) {
    Output o = run(bad);
    EXPECT_EQ(o.status, 2) << bad << "\n" << o.text;
    EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
  }
}

}  // namespace
}  // namespace coldstart::report
