#include "model/validate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/result.h"
#include "model/spec.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_reader.h"

namespace coldstart {
namespace {

namespace fs = std::filesystem;
const fs::path kRefused = fs::path(COLDSTART_SOURCE_DIR) / "tests/data/refused";

std::string refusal_of(const fs::path& file) {
  try {
    bench_results_from_text(read_file(file.string()), file.filename().string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Every refused fixture (tests/data/refused/make_fixtures.py: a real run with one rule broken) is refused, naming
// the field; python/tests/test_refused_fixtures.py feeds the same files to coldstart.load().
TEST(Validate, EveryRefusedFixtureIsRefusedNamingItsField) {
  const auto expected = nlohmann::json::parse(read_file((kRefused / "results.expected.json").string()));
  ASSERT_GE(expected.size(), 20u);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(kRefused / "results")) {
    ++files;
    const std::string name = entry.path().filename().string();
    ASSERT_TRUE(expected.contains(name)) << name << " is not in results.expected.json";
    const std::string why = refusal_of(entry.path());
    EXPECT_TRUE(why.starts_with(name + ": ")) << why;
    EXPECT_NE(why.find(expected[name].get<std::string>()), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  EXPECT_EQ(files, expected.size());
  EXPECT_EQ(refusal_of(kRefused / "base.json"), "") << "the fixtures' base must be a valid run";
}

// The rules refuse nothing bench wrote: every run committed under docs/results reads.
TEST(Validate, EveryCommittedRunReads) {
  size_t runs = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(COLDSTART_SOURCE_DIR) / "docs/results")) {
    if (entry.path().extension() != ".json" || entry.file_size() > (size_t{64} << 20)) continue;
    const auto doc = nlohmann::json::parse(read_file(entry.path().string()), nullptr, false);
    if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string() ||
        !doc["schema"].get<std::string>().starts_with("coldstart.bench/"))
      continue;  // another schema, or bench results nested in a file of another shape
    ++runs;
    EXPECT_EQ(refusal_of(entry.path()), "") << entry.path();
  }
  EXPECT_GE(runs, 10u);
}

TEST(Validate, SpecLimitsAreTheFlagsLimits) {
  BenchSpec s;
  s.devices = {"0"};
  EXPECT_FALSE(check_spec(s));
  s.ranks_per_gpu = kMaxRanksPerGpu + 1;
  ASSERT_TRUE(check_spec(s));
  EXPECT_EQ(check_spec(s)->text(), "spec.ranks_per_gpu: 65 (give 1 to 64)");
  s.ranks_per_gpu = kMaxRanksPerGpu;
  s.devices.assign(kMaxRanks / kMaxRanksPerGpu + 1, "0");  // a product past kMaxRanks, not an int overflow
  ASSERT_TRUE(check_spec(s, ""));
  EXPECT_EQ(check_spec(s, "")->path, "devices");
  s.devices = {"0"};
  s.timeout_s = kMaxTimeoutS * 2;
  EXPECT_EQ(check_spec(s)->path, "spec.timeout_s");
}

// Counts that would wrap when a rank's are summed are refused; the largest allowed ones sum without wrapping.
TEST(Validate, ConnectionCountsCannotWrapTheirSum) {
  RankNccl n;
  for (size_t i = 0; i < kMaxTransports; ++i) n.lazy_connections[std::to_string(i)] = kMaxConnections;
  EXPECT_GT(n.lazy_connection_count(), 0);
  EXPECT_LE(int64_t{kMaxConnections} * static_cast<int64_t>(kMaxTransports), std::numeric_limits<int>::max());
}

// The reader's end: a NUL is a byte of the text, not its end.
TEST(Validate, BytesAfterANulAreNotIgnored) {
  const std::string text = std::string("{\"a\": 1}") + '\0' + "garbage";
  JsonReader in(text);
  in.skip();
  try {
    in.finish();
    FAIL() << "accepted bytes after a NUL";
  } catch (const JsonSyntaxError& e) {
    EXPECT_NE(std::string(e.what()).find("a NUL byte after the value"), std::string::npos) << e.what();
  }
  const std::string nul_text = std::string("{}") + '\0';  // the reader holds a view: the text outlives it
  JsonReader nul_only(nul_text);
  nul_only.skip();
  EXPECT_THROW(nul_only.finish(), JsonSyntaxError);
  JsonReader fine("{} \n");
  fine.skip();
  EXPECT_NO_THROW(fine.finish());
}

}  // namespace coldstart
